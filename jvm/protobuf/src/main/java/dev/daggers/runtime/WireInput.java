package dev.daggers.runtime;

import com.google.protobuf.InvalidProtocolBufferException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * protobuf's wire format read from one message's byte array, as protobuf-java's array decoder
 * (CodedInputStream.newInstance(byte[])) reads it: the same checks in the same order, the same
 * exceptions, the same nesting limit. A final class over the array, where CodedInputStream is an
 * abstract one with a slow path for any varint near a message's end: in the seed query's profile
 * its calls were a tenth of decoding.
 *
 * <p>Strings are Spark's UTF8String over the message's own array, not copies: the decoder is given
 * an array of its own (Spark copies a binary value out of its row for the call), and the row it
 * builds is copied into Spark's row format before the next message is read.
 */
final class WireInput {
  /** protobuf-java's default recursion limit: nested messages and groups. */
  static final int RECURSION_LIMIT = 100;

  private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final long HIGH_BITS = 0x8080808080808080L;

  private final byte[] buf;
  private int pos;
  private int limit;  // the end of the message being read (an absolute index into buf)
  private int lastTag;
  private int depth;
  private UTF8String replaced;

  WireInput(byte[] buf) {
    this.buf = buf;
    this.limit = buf.length;
  }

  /** The next field's tag; 0 at the end of the message (or its limit). */
  int readTag() throws InvalidProtocolBufferException {
    if (pos == limit) {
      lastTag = 0;
      return 0;
    }
    lastTag = readVarint32();
    if ((lastTag >>> 3) == 0) throw invalidTag();
    return lastTag;
  }

  void checkLastTagWas(int value) throws InvalidProtocolBufferException {
    if (lastTag != value) throw invalidEndTag();
  }

  /** Skips a field of the tag's wire type; false for an end-group tag (which ends a group). */
  boolean skipField(int tag) throws InvalidProtocolBufferException {
    switch (tag & 7) {
      case 0:
        readVarint64();
        return true;
      case 1:
        skip(8);
        return true;
      case 2:
        skip(readVarint32());
        return true;
      case 3:
        skipGroup();
        checkLastTagWas((tag & ~7) | 4);
        return true;
      case 4:
        return false;
      case 5:
        skip(4);
        return true;
      default:
        throw invalidWireType();
    }
  }

  private void skipGroup() throws InvalidProtocolBufferException {
    while (true) {
      int tag = readTag();
      if (tag == 0) return;
      enter();
      boolean skipped = skipField(tag);
      depth--;
      if (!skipped) return;
    }
  }

  /** One level deeper (a nested message or group), or the error protobuf-java gives past its limit. */
  void enter() throws InvalidProtocolBufferException {
    if (depth >= RECURSION_LIMIT) throw recursionLimitExceeded();
    depth++;
  }

  void leave() {
    depth--;
  }

  /** Reads only up to `length` more bytes; returns the limit to restore with popLimit. */
  int pushLimit(int length) throws InvalidProtocolBufferException {
    if (length < 0) throw negativeSize();
    int end = pos + length;
    if (end < 0) throw parseFailure();
    if (end > limit) throw truncatedMessage();
    int old = limit;
    limit = end;
    return old;
  }

  void popLimit(int old) {
    limit = old;
  }

  int bytesUntilLimit() {
    return limit - pos;
  }

  int readVarint32() throws InvalidProtocolBufferException {
    return (int) readVarint64();
  }

  long readVarint64() throws InvalidProtocolBufferException {
    int p = pos;
    if (p < limit && buf[p] >= 0) {  // one byte: most tags, lengths and small numbers
      pos = p + 1;
      return buf[p];
    }
    long result = 0;
    for (int shift = 0; shift < 63; shift += 7) {
      if (p == limit) throw truncatedMessage();
      byte b = buf[p++];
      result |= (long) (b & 0x7F) << shift;
      if (b >= 0) {
        pos = p;
        return result;
      }
    }
    // a tenth byte: protobuf-java keeps the ninth's continuation bit as bit 63 and only checks
    // that this one ends the varint (its payload is dropped)
    if (p == limit) throw truncatedMessage();
    if (buf[p++] < 0) throw malformedVarint();
    pos = p;
    return result | Long.MIN_VALUE;
  }

  int readFixed32() throws InvalidProtocolBufferException {
    int p = pos;
    if (limit - p < 4) throw truncatedMessage();
    pos = p + 4;
    return (buf[p] & 0xff) | (buf[p + 1] & 0xff) << 8 | (buf[p + 2] & 0xff) << 16 | (buf[p + 3] & 0xff) << 24;
  }

  long readFixed64() throws InvalidProtocolBufferException {
    int p = pos;
    if (limit - p < 8) throw truncatedMessage();
    pos = p + 8;
    return (long) LONGS.get(buf, p);
  }

  /** A length-delimited field's length, checked against the message's end; pos then skips it. */
  private int length() throws InvalidProtocolBufferException {
    int size = readVarint32();
    if (size >= 0 && size <= limit - pos) return size;
    if (size < 0) throw negativeSize();
    throw truncatedMessage();
  }

  private void skip(int length) throws InvalidProtocolBufferException {
    if (length >= 0 && length <= limit - pos) {
      pos += length;
      return;
    }
    if (length < 0) throw negativeSize();
    throw truncatedMessage();
  }

  byte[] readByteArray() throws InvalidProtocolBufferException {
    int size = length();
    byte[] out = java.util.Arrays.copyOfRange(buf, pos, pos + size);
    pos += size;
    return out;
  }

  /**
   * A string field as Spark's string: checked strings must be valid UTF-8 (as protobuf-java's
   * readStringRequireUtf8); unchecked ones get U+FFFD for bad sequences, as its readString does.
   */
  UTF8String readString(boolean checked) throws InvalidProtocolBufferException {
    long span = readStringSpan(checked);
    return span == MessageRow.REPLACED ? replaced : UTF8String.fromBytes(buf, (int) (span >>> 32), (int) span);
  }

  /**
   * A string field checked as readString checks it, and where it lies: offset << 32 | length; or
   * MessageRow.REPLACED for an unchecked string of bad UTF-8, whose replacement replaced() gives.
   */
  long readStringSpan(boolean checked) throws InvalidProtocolBufferException {
    int size = length();
    int start = pos;
    pos += size;
    if (ascii(start, size) || utf8(start, size)) return (long) start << 32 | size;
    if (checked) throw invalidUtf8();
    replaced = UTF8String.fromString(new String(buf, start, size, java.nio.charset.StandardCharsets.UTF_8));
    return MessageRow.REPLACED;
  }

  /** The last unchecked string of bad UTF-8 read, its bad sequences replaced. */
  UTF8String replaced() {
    return replaced;
  }

  private boolean utf8(int start, int size) {
    try {
      java.nio.charset.StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
          .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
          .decode(java.nio.ByteBuffer.wrap(buf, start, size));
      return true;
    } catch (java.nio.charset.CharacterCodingException e) {
      return false;
    }
  }

  /** Whether the bytes are all ASCII (valid UTF-8 as they are), eight at a time. */
  private boolean ascii(int start, int size) {
    int i = start;
    int end = start + size;
    for (; i + 8 <= end; i += 8) {
      if (((long) LONGS.get(buf, i) & HIGH_BITS) != 0) return false;
    }
    for (; i < end; i++) {
      if (buf[i] < 0) return false;
    }
    return true;
  }

  /** The next length-delimited field's bytes as protobuf's ByteString (the JSON types' parse). */
  com.google.protobuf.ByteString readBytes() throws InvalidProtocolBufferException {
    int size = length();
    com.google.protobuf.ByteString out = com.google.protobuf.ByteString.copyFrom(buf, pos, size);
    pos += size;
    return out;
  }

  // protobuf-java's own errors (its factories are package-private), word for word: a message set
  // aside says why as the reference parser would
  private static InvalidProtocolBufferException truncatedMessage() {
    return new InvalidProtocolBufferException("While parsing a protocol message, the input ended unexpectedly "
        + "in the middle of a field.  This could mean either that the input has been truncated or that an "
        + "embedded message misreported its own length.");
  }

  private static InvalidProtocolBufferException negativeSize() {
    return new InvalidProtocolBufferException(
        "CodedInputStream encountered an embedded string or message which claimed to have negative size.");
  }

  private static InvalidProtocolBufferException malformedVarint() {
    return new InvalidProtocolBufferException("CodedInputStream encountered a malformed varint.");
  }

  private static InvalidProtocolBufferException invalidTag() {
    return new InvalidProtocolBufferException("Protocol message contained an invalid tag (zero).");
  }

  private static InvalidProtocolBufferException invalidEndTag() {
    return new InvalidProtocolBufferException("Protocol message end-group tag did not match expected tag.");
  }

  private static InvalidProtocolBufferException invalidWireType() {
    return new InvalidProtocolBufferException.InvalidWireTypeException("Protocol message tag had invalid wire type.");
  }

  private static InvalidProtocolBufferException recursionLimitExceeded() {
    return new InvalidProtocolBufferException("Protocol message had too many levels of nesting.  May be malicious.  "
        + "Use setRecursionLimit() to increase the recursion depth limit.");
  }

  private static InvalidProtocolBufferException parseFailure() {
    return new InvalidProtocolBufferException("Failed to parse the message.");
  }

  private static InvalidProtocolBufferException invalidUtf8() {
    return new InvalidProtocolBufferException("Protocol message had invalid UTF-8.");
  }
}
