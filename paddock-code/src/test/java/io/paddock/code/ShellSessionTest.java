package io.paddock.code;

import io.paddock.ExitStatus;
import io.paddock.Sandbox;
import io.paddock.SandboxException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Persistent shell sessions (AgentFense's session()) on a real sandbox. */
class ShellSessionTest extends SandboxTestBase {

    @Test
    void cwdVariablesFunctionsAndBackgroundProcessesPersist() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb);
             ShellSession sh = ci.shell(Map.of("GREETING", "hello"))) {
            assertThat(sh.exec("mkdir -p /workspace/app && cd /workspace/app && export MODE=test").exitCode()).isZero();
            ShellResult r = sh.exec("pwd; echo \"$MODE $GREETING\"");
            assertThat(r.stdout()).isEqualTo("/workspace/app\ntest hello\n");
            assertThat(r.stderr()).isEmpty();
            assertThat(sh.exec("sleep 300 & echo $! > /tmp/bg.pid").exitCode()).isZero();
            assertThat(sh.exec("kill -0 $(cat /tmp/bg.pid) && echo alive").stdout()).isEqualTo("alive\n");
            assertThat(sh.exec("greet() { echo \"hi $1\"; }").success()).isTrue();
            assertThat(sh.exec("greet there").stdout()).isEqualTo("hi there\n");

            // own stdout, stderr and exit code per command; output without a final newline; quoting
            ShellResult mixed = sh.exec("printf 'no newline'; echo oops >&2; false");
            assertThat(mixed.stdout()).isEqualTo("no newline");
            assertThat(mixed.stderr()).isEqualTo("oops\n");
            assertThat(mixed.exitCode()).isEqualTo(1);
            assertThat(sh.exec("echo 'single' \"double\" $'tab\\t' ü; for i in 1 2; do\n  echo $i\ndone").stdout())
                    .isEqualTo("single double tab\t ü\n1\n2\n");
            assertThat(sh.exec("cat").stdout()).isEmpty(); // stdin is /dev/null, not the session's channel
            ShellResult syntax = sh.exec("echo \"unterminated");
            assertThat(syntax.exitCode()).isNotZero();
            assertThat(syntax.stderr()).contains("unexpected EOF");
            assertThat(sh.exec("pwd").stdout()).isEqualTo("/workspace/app\n");
        }
    }

    @Test
    void aTimedOutCommandIsInterruptedAndTheSessionLivesOn() {
        try (Sandbox sb = sandbox(); CodeInterpreter ci = CodeInterpreter.of(sb); ShellSession sh = ci.shell()) {
            sh.exec("cd /tmp; export KEEP=1");
            ShellResult slow = sh.exec("echo started; while true; do sleep 1; done", Duration.ofMillis(500));
            assertThat(slow.status().outcome()).isEqualTo(ExitStatus.Outcome.TIMED_OUT);
            assertThat(slow.exitCode()).isEqualTo(124);
            assertThat(slow.stdout()).isEqualTo("started\n");
            assertThat(slow.sessionRestarted()).isFalse();
            assertThat(sh.exec("echo $KEEP; pwd").stdout()).isEqualTo("1\n/tmp\n");

            ShellResult exit = sh.exec("exit 3");
            assertThat(exit.exitCode()).isEqualTo(3);
            assertThat(sh.isAlive()).isFalse();
            ShellResult fresh = sh.exec("echo ${KEEP:-gone}; pwd");
            assertThat(fresh.sessionRestarted()).isTrue();
            assertThat(fresh.stdout()).isEqualTo("gone\n/workspace\n");
            sh.close();
            assertThatThrownBy(() -> sh.exec("true")).isInstanceOf(SandboxException.class).hasMessageContaining("closed");
        }
    }
}
