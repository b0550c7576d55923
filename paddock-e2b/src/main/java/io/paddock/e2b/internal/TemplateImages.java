package io.paddock.e2b.internal;

import io.paddock.Image;
import io.paddock.ImageInfo;
import io.paddock.ImageListener;
import io.paddock.Images;
import io.paddock.SandboxException;
import io.paddock.code.CodeImages;
import io.paddock.e2b.E2bAccess;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Templates' images built on first use: a create of a template whose image is not stored starts its build (one
 * per image, whoever asks, in the background) and waits a little; a create that comes before the build is done
 * answers 503 saying what is being built, since when and its last step. Progress goes to the daemon's log. A
 * failed build is reported (503 with its error) to the creates waiting on it or to the next one, and the create
 * after that starts it again. Thread-safe.
 */
final class TemplateImages {
    private static final System.Logger LOG = System.getLogger(TemplateImages.class.getName());

    private final E2bAccess access;
    private final Map<String, Build> builds = new ConcurrentHashMap<>();

    TemplateImages(E2bAccess access) {
        this.access = access;
    }

    /** Returns once {@code image} is stored, building it from {@code recipe} first if need be; 503 otherwise. */
    void await(String template, String image, Image recipe, Duration wait) {
        Optional<Images> store = access.images();
        if (store.isEmpty() || CodeImages.stored(store.get(), image).isPresent()) {
            return; // no store to build in: the create says the image is missing
        }
        // A failed build stays until a create has reported it; a finished one here had its image removed since.
        Build build = builds.compute(image, (k, old) -> old == null || old.done.isDone() && !old.done.isCompletedExceptionally()
                ? Build.start(template, image, recipe, store.get()) : old);
        try {
            build.done.get(wait.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new E2bError(503, "template '" + template + "' is being prepared: Paddock is building its image "
                    + image + " for the first time (" + build.elapsed() + " so far" + build.progress() + "), which"
                    + " takes a few minutes once; try again shortly. The daemon's log shows its progress;"
                    + " `paddock image prepare` on the daemon's host builds it ahead of time.");
        } catch (ExecutionException e) {
            builds.remove(image, build);
            Throwable cause = e.getCause();
            throw new E2bError(503, "template '" + template + "': building its image " + image + " failed: "
                    + (cause instanceof SandboxException x ? x.getMessage() : String.valueOf(cause))
                    + "; the next create tries again");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new E2bError(503, "template '" + template + "': interrupted while its image was being built");
        }
        builds.remove(image, build);
    }

    /** One image's build: its outcome, when it started, and the step it is at. */
    private static final class Build implements ImageListener {
        final CompletableFuture<ImageInfo> done = new CompletableFuture<>();
        final Instant started = Instant.now();
        final String template;
        volatile String step = "";

        private Build(String template) {
            this.template = template;
        }

        static Build start(String template, String image, Image recipe, Images images) {
            Build b = new Build(template);
            LOG.log(System.Logger.Level.INFO, "E2B template ''{0}'': building its image {1} on first use", template, image);
            Thread t = new Thread(() -> {
                try {
                    ImageInfo info = images.build(recipe, java.util.List.of(image), b);
                    LOG.log(System.Logger.Level.INFO, "E2B template ''{0}'': {1} built in {2}", template, image, b.elapsed());
                    b.done.complete(info);
                } catch (RuntimeException | Error e) {
                    LOG.log(System.Logger.Level.WARNING, "E2B template '" + template + "': building " + image
                            + " failed: " + e.getMessage());
                    b.done.completeExceptionally(e);
                }
            }, "e2b-template-build");
            t.setDaemon(true);
            t.start();
            return b;
        }

        String elapsed() {
            long s = Duration.between(started, Instant.now()).toSeconds();
            return s < 60 ? s + " s" : s / 60 + " min " + s % 60 + " s";
        }

        String progress() {
            String at = step;
            return at.isEmpty() ? "" : "; at " + at;
        }

        @Override
        public void step(int index, int count, String description, boolean cached) {
            step = "step " + index + "/" + count + ": " + (description.length() > 120 ? description.substring(0, 120) + "…" : description);
            LOG.log(System.Logger.Level.INFO, "E2B template ''{0}'': {1}{2}", template, step, cached ? " (cached)" : "");
        }

        @Override
        public void log(String line) {
            LOG.log(System.Logger.Level.DEBUG, "E2B template ''{0}'': {1}", template, line);
        }
    }
}
