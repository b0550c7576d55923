package io.paddock.network.internal.dns;

import org.xbill.DNS.Flags;
import org.xbill.DNS.Message;
import org.xbill.DNS.Name;
import org.xbill.DNS.Rcode;
import org.xbill.DNS.Record;
import org.xbill.DNS.Section;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A DNS server on 127.0.0.1 (UDP and TCP, one port) that answers from a table and records every question it gets,
 * so a test can prove what reached the upstream and what never did. Over UDP it answers at most 512 bytes
 * whatever EDNS says, so a big answer comes truncated and the resolver must retry over TCP.
 */
final class FakeUpstream implements AutoCloseable {
    /** One question received. */
    record Question(Name name, int type, boolean tcp) {
    }

    private record Key(Name name, int type) {
    }

    private final Map<Key, List<Record>> answers = new ConcurrentHashMap<>();
    private final Map<Key, List<Record>> additional = new ConcurrentHashMap<>();
    private final List<Question> questions = new CopyOnWriteArrayList<>();
    private final DatagramSocket udp;
    private final ServerSocket tcp;
    private final Thread udpLoop;
    private final Thread tcpLoop;

    FakeUpstream() throws IOException {
        // One port for both: the UDP port the kernel picks may be taken for TCP (another test's connection), so
        // pick again until both are free.
        DatagramSocket u = null;
        ServerSocket t = null;
        for (int attempt = 0; t == null; attempt++) {
            u = new DatagramSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            try {
                t = new ServerSocket(u.getLocalPort(), 8, InetAddress.getLoopbackAddress());
            } catch (java.net.BindException e) {
                u.close();
                if (attempt == 20) {
                    throw e;
                }
            }
        }
        udp = u;
        tcp = t;
        udpLoop = new Thread(this::serveUdp, "fake-upstream-udp");
        tcpLoop = new Thread(this::serveTcp, "fake-upstream-tcp");
        udpLoop.setDaemon(true);
        tcpLoop.setDaemon(true);
        udpLoop.start();
        tcpLoop.start();
    }

    /** Answers {@code name}/{@code type} with {@code records} (NOERROR); names not in the table get NXDOMAIN. */
    FakeUpstream answer(Name name, int type, List<? extends Record> records) {
        answers.put(new Key(name, type), List.copyOf(records));
        return this;
    }

    /** As {@link #answer}, with {@code extra} in the additional section. */
    FakeUpstream answer(Name name, int type, List<? extends Record> records, List<? extends Record> extra) {
        additional.put(new Key(name, type), List.copyOf(extra));
        return answer(name, type, records);
    }

    InetSocketAddress address() {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), udp.getLocalPort());
    }

    List<Question> questions() {
        return List.copyOf(questions);
    }

    /** The questions received for {@code name}, any type, either transport. */
    List<Question> questionsFor(Name name) {
        return questions.stream().filter(q -> q.name().equals(name)).toList();
    }

    private Message respond(byte[] wire, boolean overTcp) throws IOException {
        Message query = new Message(wire);
        Record question = query.getQuestion();
        questions.add(new Question(question.getName(), question.getType(), overTcp));
        Message response = new Message(query.getHeader().getID());
        response.getHeader().setFlag(Flags.QR);
        response.getHeader().setFlag(Flags.RA);
        response.addRecord(question, Section.QUESTION);
        List<Record> records = answers.get(new Key(question.getName(), question.getType()));
        boolean known = records != null || answers.keySet().stream().anyMatch(k -> k.name().equals(question.getName()));
        response.getHeader().setRcode(known ? Rcode.NOERROR : Rcode.NXDOMAIN);
        for (Record r : records == null ? List.<Record>of() : records) {
            response.addRecord(r, Section.ANSWER);
        }
        for (Record r : additional.getOrDefault(new Key(question.getName(), question.getType()), List.of())) {
            response.addRecord(r, Section.ADDITIONAL);
        }
        return response;
    }

    private void serveUdp() {
        byte[] buffer = new byte[4096];
        while (!udp.isClosed()) {
            DatagramPacket packet = new DatagramPacket(buffer, buffer.length);
            try {
                udp.receive(packet);
                byte[] out = respond(Arrays.copyOf(buffer, packet.getLength()), false).toWire(512);
                udp.send(new DatagramPacket(out, out.length, packet.getSocketAddress()));
            } catch (IOException e) {
                // closed, or a query the table cannot parse: the tests never send one upstream
            }
        }
    }

    private void serveTcp() {
        while (!tcp.isClosed()) {
            try (Socket socket = tcp.accept()) {
                DataInputStream in = new DataInputStream(socket.getInputStream());
                DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                byte[] query = in.readNBytes(in.readUnsignedShort());
                byte[] answer = respond(query, true).toWire(Message.MAXLENGTH);
                out.writeShort(answer.length);
                out.write(answer);
                out.flush();
            } catch (IOException e) {
                // closed, or the connection went away
            }
        }
    }

    @Override
    public void close() {
        udp.close();
        try {
            tcp.close();
            udpLoop.join(2000);
            tcpLoop.join(2000);
        } catch (IOException e) {
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
