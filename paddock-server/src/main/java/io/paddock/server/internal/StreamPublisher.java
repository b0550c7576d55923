package io.paddock.server.internal;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An {@link InputStream} as a {@link Flow.Publisher} of chunks: each read is published as soon as it
 * returns, and the stream is read only while the subscriber asks for more (so the reader's pace is the
 * subscriber's). Reads run on {@code executor}, one at a time. One subscriber, once.
 */
final class StreamPublisher implements Flow.Publisher<ByteBuffer> {
    private static final int CHUNK = 32 * 1024;

    private final InputStream in;
    private final Executor executor;
    private final Runnable onRead;
    private final AtomicBoolean subscribed = new AtomicBoolean();

    /** @param onRead called after every read that returned data */
    StreamPublisher(InputStream in, Executor executor, Runnable onRead) {
        this.in = in;
        this.executor = executor;
        this.onRead = onRead;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ByteBuffer> subscriber) {
        if (!subscribed.compareAndSet(false, true)) {
            subscriber.onSubscribe(new Flow.Subscription() {
                @Override
                public void request(long n) {
                }

                @Override
                public void cancel() {
                }
            });
            subscriber.onError(new IllegalStateException("a request body can be sent only once"));
            return;
        }
        subscriber.onSubscribe(new Pump(subscriber));
    }

    private final class Pump implements Flow.Subscription {
        private final Flow.Subscriber<? super ByteBuffer> subscriber;
        private final AtomicLong demand = new AtomicLong();
        private final AtomicBoolean running = new AtomicBoolean();
        private volatile boolean done;

        Pump(Flow.Subscriber<? super ByteBuffer> subscriber) {
            this.subscriber = subscriber;
        }

        @Override
        public void request(long n) {
            if (done) {
                return;
            }
            if (n <= 0) {
                done = true;
                subscriber.onError(new IllegalArgumentException("non-positive request: " + n));
                return;
            }
            demand.getAndAccumulate(n, (a, b) -> a + b < 0 ? Long.MAX_VALUE : a + b);
            schedule();
        }

        @Override
        public void cancel() {
            done = true;
        }

        private void schedule() {
            if (!done && demand.get() > 0 && running.compareAndSet(false, true)) {
                executor.execute(this::pump);
            }
        }

        private void pump() {
            try {
                while (!done && demand.get() > 0) {
                    byte[] buf = new byte[CHUNK];
                    int n = in.read(buf);
                    if (n < 0) {
                        done = true;
                        subscriber.onComplete();
                        return;
                    }
                    if (n > 0 && !done) {
                        onRead.run();
                        demand.decrementAndGet();
                        subscriber.onNext(ByteBuffer.wrap(buf, 0, n));
                    }
                }
            } catch (IOException | RuntimeException e) {
                if (!done) {
                    done = true;
                    subscriber.onError(e);
                }
            } finally {
                running.set(false);
            }
            schedule(); // more was asked for while this pump was finishing
        }
    }
}
