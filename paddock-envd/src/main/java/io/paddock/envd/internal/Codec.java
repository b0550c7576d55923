package io.paddock.envd.internal;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.MessageOrBuilder;
import com.google.protobuf.util.JsonFormat;

import java.nio.charset.StandardCharsets;
import java.util.Locale;

/** Connect's two codecs: protobuf's canonical JSON mapping and its binary encoding. */
public enum Codec {
    JSON("json"),
    PROTO("proto");

    private static final JsonFormat.Parser PARSER = JsonFormat.parser().ignoringUnknownFields();
    private static final JsonFormat.Printer PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();

    private final String name;

    Codec(String name) {
        this.name = name;
    }

    /** {@code application/json} for unary calls. */
    public String unaryContentType() {
        return "application/" + name;
    }

    /** {@code application/connect+json} for streaming calls. */
    public String streamContentType() {
        return "application/connect+" + name;
    }

    /**
     * What a {@code Content-Type} asks for: the codec and whether it names a streaming call; {@code null} for any
     * other type. Parameters ({@code ; charset=utf-8}) are ignored.
     */
    public static Selected select(String contentType) {
        if (contentType == null) {
            return null;
        }
        String t = contentType.toLowerCase(Locale.ROOT);
        int semi = t.indexOf(';');
        if (semi >= 0) {
            t = t.substring(0, semi);
        }
        t = t.strip();
        return switch (t) {
            case "application/json" -> new Selected(JSON, false);
            case "application/proto" -> new Selected(PROTO, false);
            case "application/connect+json" -> new Selected(JSON, true);
            case "application/connect+proto" -> new Selected(PROTO, true);
            default -> null;
        };
    }

    /** A codec and whether the content type was a streaming one. */
    public record Selected(Codec codec, boolean streaming) {
    }

    /** Decodes one message; malformed input is {@code invalid_argument}. An empty payload is the empty message. */
    @SuppressWarnings("unchecked")
    public <T extends Message> T parse(byte[] data, T prototype) {
        Message.Builder b = prototype.newBuilderForType();
        try {
            if (this == PROTO) {
                b.mergeFrom(data);
            } else if (data.length > 0) {
                PARSER.merge(new String(data, StandardCharsets.UTF_8), b);
            }
        } catch (InvalidProtocolBufferException | RuntimeException e) {
            throw ConnectException.invalid("malformed " + prototype.getDescriptorForType().getFullName() + " ("
                    + name + "): " + e.getMessage());
        }
        return (T) b.build();
    }

    public byte[] write(MessageOrBuilder m) {
        if (this == PROTO) {
            return ((Message) m).toByteArray();
        }
        try {
            return PRINTER.print(m).getBytes(StandardCharsets.UTF_8);
        } catch (InvalidProtocolBufferException e) {
            throw new ConnectException(ConnectCode.INTERNAL, "cannot print " + m.getDescriptorForType().getFullName()
                    + " as JSON: " + e.getMessage());
        }
    }
}
