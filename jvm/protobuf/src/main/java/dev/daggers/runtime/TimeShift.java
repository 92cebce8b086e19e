package dev.daggers.runtime;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.WireFormat;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.apache.spark.sql.api.java.UDF2;

/**
 * A message moved in event time: its google.protobuf.Timestamp field (by number) gets
 * `seconds` added, every other field is copied byte for byte. For the load feeder, which writes
 * copies of a pool of messages one after the other in time without decoding them.
 */
public final class TimeShift implements UDF2<byte[], Long, byte[]> {
  private static final long serialVersionUID = 1L;
  private final int field;

  public TimeShift(int field) {
    this.field = field;
  }

  @Override
  public byte[] call(byte[] value, Long seconds) throws IOException {
    if (value == null) return null;
    if (seconds == null || seconds == 0) return value;
    CodedInputStream in = CodedInputStream.newInstance(value);
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(value.length + 4);
    CodedOutputStream out = CodedOutputStream.newInstance(bytes, 256);
    while (true) {
      int tag = in.readTag();
      if (tag == 0) break;
      if (WireFormat.getTagFieldNumber(tag) == field && WireFormat.getTagWireType(tag) == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
        out.writeByteArray(field, shifted(in.readByteArray(), seconds));
      } else {
        in.skipField(tag, out);
      }
    }
    out.flush();
    return bytes.toByteArray();
  }

  private static byte[] shifted(byte[] timestamp, long add) throws IOException {
    CodedInputStream in = CodedInputStream.newInstance(timestamp);
    long seconds = 0;
    int nanos = 0;
    while (true) {
      int tag = in.readTag();
      if (tag == 0) break;
      switch (WireFormat.getTagFieldNumber(tag)) {
        case 1: seconds = in.readInt64(); break;
        case 2: nanos = in.readInt32(); break;
        default: in.skipField(tag);
      }
    }
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(16);
    CodedOutputStream out = CodedOutputStream.newInstance(bytes, 32);
    if (seconds + add != 0) out.writeInt64(1, seconds + add);
    if (nanos != 0) out.writeInt32(2, nanos);
    out.flush();
    return bytes.toByteArray();
  }
}
