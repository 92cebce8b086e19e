package dev.daggers.runtime;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.WireFormat;
import com.google.protobuf.util.JsonFormat;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.unsafe.types.UTF8String;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads protobuf wire format straight into Spark's internal rows of {@link RowConverter}'s schema,
 * without building a DynamicMessage first (which is where decoding spent its time), nor a Row of
 * Java objects that Spark would convert again (strings are read as UTF-8 bytes, as Spark keeps
 * them). Semantics follow protobuf-java's parser, which the tests hold it to: the last value of a singular field wins, a singular message
 * seen twice is merged, repeated scalars may be packed or not, a field whose wire type does not
 * match its declaration is skipped as unknown, strings protobuf-java checks (proto3's, map keys and
 * values) must be valid UTF-8, a closed (proto2) enum's unknown number is an unknown field.
 */
final class WireReader {
  private static final Set<String> JSON_TYPES = Set.of(
      "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue");
  private static final JsonFormat.Printer JSON = JsonFormat.printer().omittingInsignificantWhitespace();
  private static final int SMALL_NUMBERS = 4096;  // field numbers looked up in an array, not a map

  /** How one message type maps onto row slots; built once per type. */
  static final class Layout {
    final Descriptor descriptor;
    final FieldDescriptor[] fields;          // by slot
    final Map<Integer, Integer> slotOf = new HashMap<>();
    final Layout[] nested;                   // by slot, for message-typed fields
    final Map<Integer, String>[] enumNames;  // by slot, for enum fields
    final UTF8String[][] enumByNumber;       // by slot, for enum fields: small non-negative numbers' names
    final boolean[] utf8;                    // by slot: strings that must be valid UTF-8
    final boolean[] closedEnum;              // by slot: an unknown number is an unknown field (proto2)
    // per slot, what the read loop asks of each field: FieldDescriptor's getters recompute these
    // from the descriptor proto on every call (protobuf-java 4), which profiled at ~10% of decoding
    final boolean[] repeated;
    final boolean[] packable;
    final int[] wireType;
    final FieldDescriptor.Type[] type;
    final FieldDescriptor.JavaType[] javaType;
    final int[] slotByNumber;                // field number -> slot + 1 (0: unknown), for small numbers
    private final Object[] defaultValues;    // by slot, Spark's values, for fields neither repeated nor messages
    InternalRow defaults;

    @SuppressWarnings("unchecked")
    private Layout(Descriptor d, Map<String, Layout> cache) {
      descriptor = d;
      cache.put(d.getFullName(), this);
      List<FieldDescriptor> fs = d.getFields();
      fields = fs.toArray(new FieldDescriptor[0]);
      nested = new Layout[fields.length];
      enumNames = new Map[fields.length];
      enumByNumber = new UTF8String[fields.length][];
      utf8 = new boolean[fields.length];
      closedEnum = new boolean[fields.length];
      repeated = new boolean[fields.length];
      packable = new boolean[fields.length];
      wireType = new int[fields.length];
      type = new FieldDescriptor.Type[fields.length];
      javaType = new FieldDescriptor.JavaType[fields.length];
      defaultValues = new Object[fields.length];
      int maxNumber = 0;
      for (FieldDescriptor f : fs) maxNumber = Math.max(maxNumber, f.getNumber());
      slotByNumber = new int[Math.min(maxNumber, SMALL_NUMBERS) + 1];
      for (int i = 0; i < fields.length; i++) {
        FieldDescriptor f = fields[i];
        slotOf.put(f.getNumber(), i);
        if (f.getNumber() < slotByNumber.length) slotByNumber[f.getNumber()] = i + 1;
        repeated[i] = f.isRepeated();
        packable[i] = f.isRepeated() && f.isPackable();
        wireType[i] = f.getLiteType().getWireType();
        type[i] = f.getType();
        javaType[i] = f.getJavaType();
        // as protobuf-java decides: proto3, map entries' strings, editions and java_string_check_utf8
        utf8[i] = f.getType() == FieldDescriptor.Type.STRING && f.needsUtf8Check();
        closedEnum[i] = f.getJavaType() == FieldDescriptor.JavaType.ENUM && f.legacyEnumFieldTreatedAsClosed();
        if (f.getJavaType() == FieldDescriptor.JavaType.MESSAGE && !JSON_TYPES.contains(f.getMessageType().getFullName())) {
          Layout known = cache.get(f.getMessageType().getFullName());
          nested[i] = known != null ? known : new Layout(f.getMessageType(), cache);
        } else if (f.getJavaType() == FieldDescriptor.JavaType.ENUM) {
          Map<Integer, String> names = new HashMap<>();
          // the first value with a number wins, as protobuf-java resolves aliases
          for (EnumValueDescriptor v : f.getEnumType().getValues()) names.putIfAbsent(v.getNumber(), v.getName());
          enumNames[i] = names;
          int max = 0;
          for (int n : names.keySet()) max = Math.max(max, n);
          enumByNumber[i] = new UTF8String[Math.min(max, SMALL_NUMBERS) + 1];
          for (Map.Entry<Integer, String> e : names.entrySet()) {
            if (e.getKey() >= 0 && e.getKey() < enumByNumber[i].length) {
              enumByNumber[i][e.getKey()] = UTF8String.fromString(e.getValue());
            }
          }
        }
        if (!repeated[i] && nested[i] == null) defaultValues[i] = sparkValue(defaultOf(this, i));
      }
    }

    /** The slot of a field number, or -1 when the message has no such field. */
    int slot(int number) {
      if (number < slotByNumber.length) return slotByNumber[number] - 1;
      Integer slot = slotOf.get(number);
      return slot == null ? -1 : slot;
    }

    Object defaultValue(int slot) {
      return defaultValues[slot];
    }

    /** The layout of a message type, or null when it uses proto2 groups (read reflectively then). */
    static Layout of(Descriptor d) {
      Layout layout = new Layout(d, new HashMap<>());
      return layout.hasGroups(new java.util.HashSet<>()) ? null : layout;
    }

    private boolean hasGroups(Set<String> seen) {
      if (!seen.add(descriptor.getFullName())) return false;
      for (int i = 0; i < fields.length; i++) {
        if (fields[i].getType() == FieldDescriptor.Type.GROUP) return true;
        if (nested[i] != null && nested[i].hasGroups(seen)) return true;
      }
      return false;
    }
  }

  /** What scalar() gives for a closed enum's unknown number: protobuf-java keeps it as an unknown field. */
  private static final Object UNKNOWN = new Object();

  private WireReader() {}

  @SuppressWarnings("unchecked")
  private static void readInto(Layout layout, Object[] slots, CodedInputStream in) throws IOException {
    while (true) {
      int tag = in.readTag();
      if (tag == 0) return;
      int slot = layout.slot(WireFormat.getTagFieldNumber(tag));
      if (slot < 0) {
        if (!in.skipField(tag)) return;  // an end-group tag ends this message
        continue;
      }
      FieldDescriptor f = layout.fields[slot];
      int wire = WireFormat.getTagWireType(tag);
      int expected = layout.wireType[slot];
      boolean packed = layout.packable[slot] && wire == WireFormat.WIRETYPE_LENGTH_DELIMITED;
      if (wire != expected && !packed) {
        if (!in.skipField(tag)) return;  // protobuf-java keeps it as an unknown field
        continue;
      }
      if (packed) {
        List<Object> list = list(slots, slot);
        int limit = in.pushLimit(in.readRawVarint32());
        while (in.getBytesUntilLimit() > 0) {
          Object value = scalar(layout, slot, f, in);
          if (value != UNKNOWN) list.add(value);
        }
        in.popLimit(limit);
      } else if (layout.javaType[slot] == FieldDescriptor.JavaType.MESSAGE) {
        Layout sub = layout.nested[slot];
        if (sub == null) {  // Struct/Value/ListValue: as JSON text, via the reflective parser
          String json = JSON.print(DynamicMessage.parseFrom(f.getMessageType(), in.readBytes()));
          if (layout.repeated[slot]) list(slots, slot).add(json); else slots[slot] = json;
          continue;
        }
        Object[] target;
        if (layout.repeated[slot]) {
          target = new Object[sub.fields.length];
          list(slots, slot).add(target);
        } else {
          target = slots[slot] instanceof Object[] ? (Object[]) slots[slot] : new Object[sub.fields.length];
          slots[slot] = target;  // a singular message seen again is merged into the same slots
        }
        int limit = in.pushLimit(in.readRawVarint32());
        readInto(sub, target, in);
        in.checkLastTagWas(0);
        in.popLimit(limit);
      } else if (layout.repeated[slot]) {
        Object value = scalar(layout, slot, f, in);
        if (value != UNKNOWN) list(slots, slot).add(value);
      } else {
        Object value = scalar(layout, slot, f, in);
        if (value != UNKNOWN) slots[slot] = value;
      }
    }
  }

  @SuppressWarnings("unchecked")
  private static List<Object> list(Object[] slots, int slot) {
    if (!(slots[slot] instanceof List)) slots[slot] = new ArrayList<>();
    return (List<Object>) slots[slot];
  }

  private static Object scalar(Layout layout, int slot, FieldDescriptor f, CodedInputStream in) throws IOException {
    switch (layout.type[slot]) {
      case INT32: return in.readInt32();
      case SINT32: return in.readSInt32();
      case SFIXED32: return in.readSFixed32();
      case UINT32: return in.readUInt32();
      case FIXED32: return in.readFixed32();
      case INT64: return in.readInt64();
      case SINT64: return in.readSInt64();
      case SFIXED64: return in.readSFixed64();
      case UINT64: return in.readUInt64();
      case FIXED64: return in.readFixed64();
      case FLOAT: return in.readFloat();
      case DOUBLE: return in.readDouble();
      case BOOL: return in.readBool();
      case STRING:
        return utf8String(in.readByteArray(), layout.utf8[slot]);
      case BYTES: return in.readByteArray();
      case ENUM: {
        int n = in.readEnum();
        UTF8String[] small = layout.enumByNumber[slot];
        if (n >= 0 && n < small.length && small[n] != null) return small[n];
        String name = layout.enumNames[slot].get(n);
        if (name == null && layout.closedEnum[slot]) return UNKNOWN;
        return UTF8String.fromString(name != null ? name : "UNKNOWN_ENUM_VALUE_" + f.getEnumType().getName() + "_" + n);
      }
      default:
        throw new InvalidProtocolBufferException("unsupported field type " + f.getType() + " of " + f.getFullName());
    }
  }

  /**
   * The message as Spark's internal row of RowConverter's schema, and its event time in
   * microseconds: {message, rowtime}, or null when the event time field is unset.
   */
  static Object[] read(Layout layout, byte[] bytes, int eventTimeField) throws IOException {
    Object[] slots = new Object[layout.fields.length];
    CodedInputStream in = CodedInputStream.newInstance(bytes);
    readInto(layout, slots, in);
    in.checkLastTagWas(0);
    int ts = layout.slot(eventTimeField);
    if (ts < 0 || !(slots[ts] instanceof Object[])) return null;
    Object[] t = (Object[]) slots[ts];
    // through Instant, as Spark turns the reference path's Instant into microseconds (negative
    // nanos included); out of Instant's or a long's range, this throws: a message set aside
    Instant rowtime = Instant.ofEpochSecond(t[0] == null ? 0L : (Long) t[0], t[1] == null ? 0 : (Integer) t[1]);
    long micros = Math.addExact(Math.multiplyExact(rowtime.getEpochSecond(), 1_000_000L), rowtime.getNano() / 1000);
    return new Object[] {finish(layout, slots), micros};
  }

  /** Slots to a row: defaults for what was absent, arrays for repeated fields, rows for messages. */
  private static InternalRow finish(Layout layout, Object[] slots) {
    Object[] values = new Object[slots.length];
    for (int i = 0; i < slots.length; i++) {
      Object v = slots[i];
      Layout sub = layout.nested[i];
      if (layout.repeated[i]) {
        List<?> in = v == null ? List.of() : (List<?>) v;
        Object[] out = new Object[in.size()];
        for (int j = 0; j < out.length; j++) {
          Object e = in.get(j);
          out[j] = sub != null ? finish(sub, (Object[]) e) : sparkValue(e);
        }
        values[i] = new GenericArrayData(out);
      } else if (sub != null) {
        values[i] = v == null ? defaults(sub) : finish(sub, (Object[]) v);
      } else {
        values[i] = v != null ? sparkValue(v) : layout.defaultValue(i);
      }
    }
    return new GenericInternalRow(values);
  }

  /** An absent message's row of defaults, built once: Spark only reads the rows it is given. */
  private static InternalRow defaults(Layout layout) {
    if (layout.defaults == null) layout.defaults = finish(layout, new Object[layout.fields.length]);
    return layout.defaults;
  }

  /**
   * A string field's bytes as Spark's string, without a Java String between: checked strings must be
   * valid UTF-8 (as readStringRequireUtf8); others get U+FFFD for bad sequences, as readString does.
   */
  private static UTF8String utf8String(byte[] bytes, boolean required)
      throws InvalidProtocolBufferException {
    for (byte b : bytes) {
      if (b < 0) return nonAscii(bytes, required);
    }
    return UTF8String.fromBytes(bytes);
  }

  private static UTF8String nonAscii(byte[] bytes, boolean required)
      throws InvalidProtocolBufferException {
    if (!required) {
      return UTF8String.fromString(new String(bytes, java.nio.charset.StandardCharsets.UTF_8));
    }
    try {
      java.nio.charset.StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
          .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
          .decode(java.nio.ByteBuffer.wrap(bytes));
    } catch (java.nio.charset.CharacterCodingException e) {
      throw new InvalidProtocolBufferException("Protocol message had invalid UTF-8.");
    }
    return UTF8String.fromBytes(bytes);
  }

  /** Spark's value of what the read loop gives: strings of the JSON types become UTF8Strings. */
  private static Object sparkValue(Object v) {
    return v instanceof String ? UTF8String.fromString((String) v) : v;
  }

  private static Object defaultOf(Layout layout, int slot) {
    FieldDescriptor f = layout.fields[slot];
    switch (f.getJavaType()) {
      case ENUM: return ((EnumValueDescriptor) f.getDefaultValue()).getName();
      case BYTE_STRING: return ((com.google.protobuf.ByteString) f.getDefaultValue()).toByteArray();
      case MESSAGE:  // Struct/Value/ListValue left unset: the JSON of the default instance
        try {
          return JSON.print(DynamicMessage.getDefaultInstance(f.getMessageType()));
        } catch (Exception e) {
          return null;
        }
      default: return f.getDefaultValue();
    }
  }

}
