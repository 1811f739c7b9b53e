package craits.bot;

import craits.v1.BotMessage;
import craits.v1.RefereeGrpc;
import craits.v1.RefereeMessage;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.io.File;
import java.io.IOException;
import java.util.Timer;
import java.util.TimerTask;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

/** The Play stream on gRPC (TCP, or TLS with the organizer's certificate): a bot outside the sandbox. */
final class GrpcCall implements Call {
    private static final Object DONE = new Object();

    private final String target;
    private final boolean tls;
    private final String caFile;
    private ManagedChannel channel;
    private ClientCallStreamObserver<BotMessage> requests;
    private final BlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
    private final Object writing = new Object();
    private boolean left;
    private Ended status = new Ended("OK", "");

    GrpcCall(String target, boolean tls, String caFile) {
        this.target = target;
        this.tls = tls;
        this.caFile = caFile;
    }

    /** TLS credentials trusting {@code caFile} (else the system's authorities): no plain-text fall-back. */
    static ChannelCredentials credentials(boolean tls, String caFile) throws IOException {
        if (!tls) {
            return InsecureChannelCredentials.create();
        }
        TlsChannelCredentials.Builder builder = TlsChannelCredentials.newBuilder();
        if (caFile != null && !caFile.isEmpty()) {
            builder.trustManager(new File(caFile));
        }
        return builder.build();
    }

    @Override
    public void open() throws Ended {
        try {
            channel = Grpc.newChannelBuilder(target, credentials(tls, caFile))
                    .maxInboundMessageSize(FramedCall.MAX_FROM_REFEREE).build();
        } catch (IOException | IllegalArgumentException err) {
            throw new Ended("INVALID_ARGUMENT", err.getMessage());
        } catch (UnsupportedOperationException err) { // (Debian's Netty 4.1.48 gives the JDK's TLS no ALPN)
            throw new Ended("FAILED_PRECONDITION", "TLS is not available with these grpc-java jars (" + err.getMessage()
                    + "): Debian's Netty offers the JDK's TLS no ALPN, which gRPC needs; build the bot with Maven "
                    + "(pom.xml: grpc-netty-shaded brings its own), or ask for the referee's plain-text address");
        }
        RefereeGrpc.newStub(channel).play(new ClientResponseObserver<BotMessage, RefereeMessage>() {
            @Override
            public void beforeStart(ClientCallStreamObserver<BotMessage> stream) {
                requests = stream;
            }

            @Override
            public void onNext(RefereeMessage message) {
                inbox.add(message);
            }

            @Override
            public void onError(Throwable err) {
                Status s = Status.fromThrowable(err);
                String details = s.getDescription() == null ? "" : s.getDescription();
                for (Throwable cause = err; cause != null; cause = cause.getCause()) {
                    if (cause instanceof SSLException) {
                        details = "TLS: " + cause.getMessage();
                    }
                }
                inbox.add(new Ended(s.getCode().name(), details));
            }

            @Override
            public void onCompleted() {
                inbox.add(DONE);
            }
        });
    }

    @Override
    public void write(BotMessage message) throws Ended {
        synchronized (writing) {
            if (left) {
                throw new Ended("INTERNAL", "the stream had ended");
            }
            requests.onNext(message);
        }
    }

    @Override
    public RefereeMessage read() throws Ended {
        Object item;
        try {
            item = inbox.take();
        } catch (InterruptedException err) {
            Thread.currentThread().interrupt();
            throw new Ended("CANCELLED", "interrupted");
        }
        if (item instanceof RefereeMessage message) {
            return message;
        }
        if (item == DONE) {
            return null;
        }
        Ended ended = (Ended) item;
        if (ended.code.equals("OK")) {
            return null;
        }
        throw ended;
    }

    @Override
    public void leave() {
        synchronized (writing) {
            if (left || requests == null) {
                return;
            }
            left = true;
            requests.onCompleted();
        }
        Timer timer = new Timer("craits-leave", true);
        timer.schedule(new TimerTask() {
            @Override
            public void run() {
                requests.cancel("the bot left", null);
            }
        }, Runner.LEAVE_MS);
    }

    @Override
    public void close() {
        if (channel != null) {
            channel.shutdownNow();
            try {
                channel.awaitTermination(1, TimeUnit.SECONDS);
            } catch (InterruptedException err) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public Ended status() {
        return status;
    }
}
