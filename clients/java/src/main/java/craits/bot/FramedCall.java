package craits.bot;

import craits.v1.BotMessage;
import craits.v1.RefereeMessage;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Timer;
import java.util.TimerTask;

/**
 * The Play stream as frames on the sandbox's frames socket (CRAITS_FRAMED_SOCKET; docs/protocol.md,
 * "Frames on the sandbox's socket"): 1 byte of kind, 4 of length (big-endian), the bytes. This
 * is how a Java bot talks to a referee that launched it: grpc-java cannot dial the sandbox's
 * {@code unix:} gRPC socket without netty's native epoll library, which Debian does not ship,
 * while Java 16+ opens a Unix socket itself. No gRPC class is loaded on this path (a faster start).
 */
final class FramedCall implements Call {
    static final int MESSAGE = 0;
    static final int END = 1;
    static final int MAX_FROM_REFEREE = 4 * 1024 * 1024;

    private final String path;
    private SocketChannel channel;
    private final Object writing = new Object();
    private boolean left;
    private Ended status = new Ended("UNAVAILABLE", "the referee closed the connection without ending the stream");

    FramedCall(String path) {
        this.path = path;
    }

    @Override
    public void open() throws Ended {
        try {
            channel = SocketChannel.open(StandardProtocolFamily.UNIX);
            channel.connect(UnixDomainSocketAddress.of(path));
        } catch (IOException err) {
            throw new Ended("UNAVAILABLE", "cannot connect to " + path + ": " + err.getMessage());
        }
    }

    @Override
    public void write(BotMessage message) throws Ended {
        byte[] payload = message.toByteArray();
        ByteBuffer frame = ByteBuffer.allocate(5 + payload.length);
        frame.put((byte) MESSAGE).putInt(payload.length).put(payload).flip();
        synchronized (writing) {
            if (left) {
                throw new Ended("INTERNAL", "the stream had ended");
            }
            send(frame);
        }
    }

    private void send(ByteBuffer frame) throws Ended {
        try {
            while (frame.hasRemaining()) {
                channel.write(frame);
            }
        } catch (IOException err) {
            throw new Ended("UNAVAILABLE", "the connection to the referee broke: " + err.getMessage());
        }
    }

    @Override
    public RefereeMessage read() throws Ended {
        ByteBuffer header = fill(5);
        int kind = header.get() & 0xff;
        long size = header.getInt() & 0xffffffffL;
        if ((kind != MESSAGE && kind != END) || size > MAX_FROM_REFEREE) {
            throw new Ended("UNAVAILABLE", "a frame the referee cannot have sent (kind " + kind + ", " + size + " bytes)");
        }
        ByteBuffer payload = fill((int) size);
        if (kind == END) {
            String text = new String(payload.array(), StandardCharsets.UTF_8);
            int cut = text.indexOf('\n');
            String name = cut < 0 ? text : text.substring(0, cut);
            status = new Ended(name.isEmpty() ? "OK" : name, cut < 0 ? "" : text.substring(cut + 1));
            return null;
        }
        try {
            return RefereeMessage.parseFrom(payload.array());
        } catch (com.google.protobuf.InvalidProtocolBufferException err) {
            throw new Ended("INTERNAL", "a frame of " + size + " bytes is not a RefereeMessage");
        }
    }

    private ByteBuffer fill(int size) throws Ended {
        ByteBuffer buffer = ByteBuffer.allocate(size);
        try {
            while (buffer.hasRemaining()) {
                if (channel.read(buffer) < 0) {
                    throw status;
                }
            }
        } catch (IOException err) {
            throw new Ended("UNAVAILABLE", "the connection to the referee broke: " + err.getMessage());
        }
        return buffer.flip();
    }

    @Override
    public void leave() {
        synchronized (writing) {
            if (left || channel == null) {
                return;
            }
            left = true;
            try {
                send(ByteBuffer.wrap(new byte[] {END, 0, 0, 0, 0}));
            } catch (Ended err) {
                return; // (gone already: the reader sees it)
            }
        }
        Timer timer = new Timer("craits-leave", true);
        timer.schedule(new TimerTask() {
            @Override
            public void run() {
                close();
            }
        }, Runner.LEAVE_MS);
    }

    @Override
    public void close() {
        try {
            if (channel != null) {
                channel.close();
            }
        } catch (IOException err) {
            // closing: nothing to do
        }
    }

    @Override
    public Ended status() {
        return status;
    }
}
