package io.paddock.server;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.openqa.selenium.By;
import org.openqa.selenium.Cookie;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

import java.io.File;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.function.Function;

import static io.paddock.server.Fixture.json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The dashboard as a person uses it, in a real headless Chromium (Debian's {@code chromium} and
 * {@code chromium-driver}, driven by Selenium; nothing is downloaded) against a real daemon over the real engine:
 * sign in with the token, see sandboxes appear with their state, labels, image, age and usage, open one's live logs
 * (a hostile line stays text), destroy one, reload, sign out; a forged session lands on the sign-in page.
 * Screenshots are kept in {@code target/dashboard/}.
 */
class DashboardBrowserTest {
    private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    private static final Path SHOTS = Path.of("target", "dashboard");
    private static final String XSS = "<img src=x onerror=\"window.__xss=1\">";

    /** Selenium's logger, held so that its level stays: it would warn that it has no CDP for this Chromium, unused here. */
    private static final java.util.logging.Logger SELENIUM = java.util.logging.Logger.getLogger("org.openqa.selenium");

    private static Fixture f;
    private static ChromeDriverService service;
    private static WebDriver driver;
    private static Path profile;

    @BeforeAll
    static void start() throws IOException {
        for (Path p : List.of(CHROMIUM, CHROMEDRIVER)) {
            if (!Files.isExecutable(p)) {
                fail(p + " is missing: this test drives Debian's headless Chromium through its chromedriver. Install them"
                        + " with: apt-get install -y chromium chromium-driver (scripts/prereqs.sh test does)");
            }
        }
        SELENIUM.setLevel(java.util.logging.Level.SEVERE);
        Files.createDirectories(SHOTS);
        profile = Files.createTempDirectory("paddock-chromium-");
        f = Fixture.start(b -> b.maxFailedAuthPerMinutePerIp(100_000), 100);
        // The driver's path is given, so Selenium Manager never runs (it would download a driver).
        System.setProperty("webdriver.chrome.driver", CHROMEDRIVER.toString());
        service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile()).usingAnyFreePort().build();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,1000",
                "--user-data-dir=" + profile, "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-extensions",
                // nothing but loopback: every other host name fails to resolve
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1");
        try {
            driver = new ChromeDriver(service, options);
        } catch (RuntimeException e) {
            f.close();
            throw e;
        }
    }

    @AfterAll
    static void stop() throws IOException {
        try {
            if (driver != null) {
                driver.quit();
            }
            if (service != null) {
                service.stop();
            }
        } finally {
            try {
                if (f != null) {
                    f.close();
                }
            } finally {
                if (profile != null) {
                    try (var walk = Files.walk(profile)) {
                        walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                    }
                }
            }
        }
    }

    private static <T> T await(String what, Function<WebDriver, T> condition) {
        return new WebDriverWait(driver, Duration.ofSeconds(30)).withMessage(what)
                .ignoring(StaleElementReferenceException.class).until(condition);
    }

    private static String create(String extraJson) {
        HttpResponse<String> r = f.post("/v1/sandboxes", Fixture.SMALL + extraJson + "}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return json(r).get("id").asText();
    }

    private static By row(String id) {
        return By.cssSelector("#sandboxes tr[data-id='" + id + "']");
    }

    private static void screenshot(String name) throws IOException {
        File shot = ((ChromeDriver) driver).getScreenshotAs(OutputType.FILE);
        Files.copy(shot.toPath(), SHOTS.resolve(name + ".png"), StandardCopyOption.REPLACE_EXISTING);
    }

    private static Object js(String script) {
        return ((JavascriptExecutor) driver).executeScript(script);
    }

    @Test
    void signInWatchASandboxAppearReadItsLogsDestroyItAndSignOut() throws Exception {
        try {
            journey();
        } catch (AssertionError | RuntimeException e) {
            screenshot("failure");
            throw e;
        }
    }

    private void journey() throws Exception {
        String secret = "topsecret-" + UUID.randomUUID();
        String name = "dash-" + UUID.randomUUID().toString().substring(0, 8);
        String logged = create(",\"name\":\"" + name + "\",\"labels\":{\"team\":\"ui\"},\"secrets\":{\"API_KEY\":\"" + secret
                + "\"},\"entrypoint\":[\"sh\",\"-c\",\"echo hello-from-dashboard; echo '" + XSS.replace("\"", "\\\"")
                + "'; echo warned >&2; i=0; while :; do i=$((i+1)); echo tick-$i; sleep 1; done\"]");

        // an unauthenticated visit shows the sign-in form
        driver.get(f.server.url() + "/ui");
        await("the sign-in form", d -> d.findElement(By.id("login")).isDisplayed());
        assertThat(driver.findElement(By.id("app")).isDisplayed()).isFalse();
        screenshot("login");

        // a wrong token is refused on the page
        driver.findElement(By.id("token")).sendKeys("not-a-token");
        driver.findElement(By.id("login-submit")).click();
        await("the refusal", d -> d.findElement(By.id("login-error")).getText().contains("not known"));

        driver.findElement(By.id("token")).sendKeys(f.token);
        driver.findElement(By.id("login-submit")).click();
        await("the sandbox list", d -> d.findElement(By.id("app")).isDisplayed());
        assertThat(driver.findElement(By.id("who")).getText()).isEqualTo("operator");

        // the sandbox's row: id, name, state, labels, image, tier, age, and its usage once counted
        await("the sandbox's row", d -> d.findElement(row(logged)));
        await("its usage", d -> d.findElement(row(logged)).findElement(By.cssSelector("td.memory")).getText().contains("MiB"));
        String text = driver.findElement(row(logged)).getText();
        assertThat(text).contains(logged, name, "RUNNING", "team=ui", "host", "runc", "/ 128 MiB");

        // a sandbox created meanwhile appears without a reload
        String other = create(",\"labels\":{\"team\":\"later\"}");
        await("the new sandbox to appear", d -> d.findElement(row(other)).getText().contains("team=later"));

        // live logs: what the entrypoint printed, then what it printed seconds later, all of it as text
        await("the Logs button", d -> {
            d.findElement(row(logged)).findElement(By.cssSelector("button.logs")).click();
            return true;
        });
        await("the entrypoint's first lines", d -> d.findElement(By.id("logs-stdout")).getText().contains("hello-from-dashboard"));
        int seen = await("a tick", d -> lastTick(d.findElement(By.id("logs-stdout")).getText()));
        await("ticks printed after the logs were opened", d -> lastTick(d.findElement(By.id("logs-stdout")).getText()) >= seen + 2);
        assertThat(driver.findElement(By.id("logs-stdout")).getText()).contains(XSS);
        assertThat(driver.findElement(By.id("logs-stderr")).getText()).contains("warned");
        assertThat(driver.findElements(By.cssSelector("#logs img, #sandboxes img"))).isEmpty();
        assertThat(js("return window.__xss === undefined")).isEqualTo(true);
        // no secret, and not the token, anywhere on the page
        assertThat(driver.getPageSource()).doesNotContain(secret).doesNotContain(f.token);
        screenshot("dashboard");

        // destroy: two clicks, then the row says STOPPED and the daemon agrees
        await("the Destroy button", d -> {
            d.findElement(row(other)).findElement(By.cssSelector("button.destroy")).click();
            return true;
        });
        await("the confirmation", d -> d.findElement(row(other)).findElement(By.cssSelector("button.destroy")).getText()
                .equals("Confirm destroy"));
        await("the confirmed destroy", d -> {
            d.findElement(row(other)).findElement(By.cssSelector("button.destroy.armed")).click();
            return true;
        });
        await("the destroyed sandbox's row to say STOPPED", d -> "STOPPED".equals(d.findElement(row(other)).getAttribute("data-state")));
        assertThat(json(f.get("/v1/sandboxes/" + other)).get("state").asText()).isEqualTo("STOPPED");
        assertThat(json(f.get("/v1/sandboxes/" + logged)).get("state").asText()).isEqualTo("RUNNING");
        screenshot("destroyed");

        // a reload keeps the tab's session
        driver.navigate().refresh();
        await("the list after a reload", d -> d.findElement(row(logged)).isDisplayed());

        // sign out: the form again, and the old cookie is dead on the server
        Cookie session = driver.manage().getCookieNamed("paddock_session");
        assertThat(session.isHttpOnly()).isTrue();
        assertThat(session.getSameSite()).isEqualTo("Strict");
        String csrf = (String) js("return sessionStorage.getItem('paddock.csrf')");
        driver.findElement(By.id("logout")).click();
        await("the sign-in form after signing out", d -> d.findElement(By.id("login")).isDisplayed());
        HttpResponse<String> replay = f.send(HttpRequest.newBuilder(f.uri("/v1/sandboxes"))
                .header("Cookie", "paddock_session=" + session.getValue()).header("X-Paddock-CSRF", csrf).GET().build());
        assertThat(replay.statusCode()).isEqualTo(401);

        // a forged session (cookie and token both made up) lands on the sign-in form, nothing shown
        byte[] raw = new byte[32];
        new SecureRandom().nextBytes(raw);
        driver.manage().addCookie(new Cookie.Builder("paddock_session", Base64.getUrlEncoder().withoutPadding()
                .encodeToString(raw)).path("/").isHttpOnly(true).sameSite("Strict").build());
        js("sessionStorage.setItem('paddock.csrf', 'forged')");
        driver.navigate().refresh();
        await("the sign-in form for a forged session", d -> d.findElement(By.id("login")).isDisplayed());
        assertThat(driver.findElements(By.cssSelector("#sandboxes tbody tr"))).isEmpty();
        screenshot("forged");
    }

    /** The last {@code tick-N} line's N; null (not yet) when there is none. */
    private static Integer lastTick(String logs) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("tick-(\\d+)").matcher(logs);
        Integer last = null;
        while (m.find()) {
            last = Integer.parseInt(m.group(1));
        }
        return last;
    }
}
