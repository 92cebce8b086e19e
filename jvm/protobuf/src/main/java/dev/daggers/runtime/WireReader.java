package dev.daggers.runtime;

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
    final int[] kind;                        // by slot: where MessageRow keeps it (SCALAR_KINDS, or OBJECT)
    final int[][] oneofPeers;                // by slot: the other fields of its oneof (null: in none)
    final boolean zeroDefaults;              // every scalar's default is its zero bits (proto3): no set bits kept
    private final Object[] defaultValues;    // by slot, Spark's values, for fields neither repeated nor messages
    private MessageRow defaults;

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
      kind = new int[fields.length];
      oneofPeers = new int[fields.length][];
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
        kind[i] = kindOf(f, nested[i] != null);
        // a real oneof (not proto3 optional's own): setting one of its fields clears the others
        com.google.protobuf.Descriptors.OneofDescriptor oneof = f.getRealContainingOneof();
        if (oneof != null) {
          oneofPeers[i] = oneof.getFields().stream().filter(g -> g != f).mapToInt(g -> g.getIndex()).toArray();
        }
      }
      boolean zero = true;
      for (int i = 0; i < fields.length; i++) {
        if (kind[i] != OBJECT && !isZero(kind[i], i)) zero = false;
      }
      zeroDefaults = zero;
    }

    private boolean isZero(int k, int slot) {
      Object d = defaultValues[slot];
      switch (k) {
        case STRING: return ((UTF8String) d).numBytes() == 0;
        // number 0 reads as the first name of 0: a default that is an alias of it is not zero
        case ENUM: return ((EnumValueDescriptor) fields[slot].getDefaultValue()).getNumber() == 0
            && enumName(slot, 0).equals(d);
        case FLOAT: return Float.floatToRawIntBits((Float) d) == 0;
        case DOUBLE: return Double.doubleToRawLongBits((Double) d) == 0;
        case BOOL: return !(Boolean) d;
        default: return ((Number) d).longValue() == 0;
      }
    }

    /** Spark's string of an enum number: its name, or protobuf-java's name for a number it lacks. */
    UTF8String enumName(int slot, int n) {
      UTF8String[] small = enumByNumber[slot];
      if (n >= 0 && n < small.length && small[n] != null) return small[n];
      String name = enumNames[slot].get(n);
      return UTF8String.fromString(name != null ? name
          : "UNKNOWN_ENUM_VALUE_" + fields[slot].getEnumType().getName() + "_" + n);
    }

    /** An absent message's row of defaults, built once: Spark only reads the rows it is given. */
    MessageRow defaults() {
      if (defaults == null) defaults = new MessageRow(this, new byte[0]);
      return defaults;
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

  /** Where MessageRow keeps a field: singular scalars' bits by kind, everything else an object. */
  static final int OBJECT = 0;
  static final int INT = 1;
  static final int LONG = 2;
  static final int FLOAT = 3;
  static final int DOUBLE = 4;
  static final int BOOL = 5;
  static final int ENUM = 6;
  static final int STRING = 7;

  private static int kindOf(FieldDescriptor f, boolean message) {
    if (f.isRepeated() || message) return OBJECT;
    switch (f.getJavaType()) {
      case INT: return INT;
      case LONG: return LONG;
      case FLOAT: return FLOAT;
      case DOUBLE: return DOUBLE;
      case BOOLEAN: return BOOL;
      case ENUM: return ENUM;
      case STRING: return STRING;
      default: return OBJECT;  // bytes; the JSON-typed messages (Struct, Value, ListValue)
    }
  }

  /** What scalar() gives for a closed enum's unknown number: protobuf-java keeps it as an unknown field. */
  private static final Object UNKNOWN = new Object();

  private WireReader() {}

  @SuppressWarnings("unchecked")
  private static void readInto(Layout layout, MessageRow row, WireInput in) throws IOException {
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
      int kind = layout.kind[slot];
      if (kind != OBJECT) {
        scalarInto(layout, slot, row, in);
      } else if (packed) {
        List<Object> list = list(row, slot);
        int limit = in.pushLimit(in.readVarint32());
        while (in.bytesUntilLimit() > 0) {
          Object value = scalar(layout, slot, f, in);
          if (value != UNKNOWN) list.add(value);
        }
        in.popLimit(limit);
      } else if (layout.javaType[slot] == FieldDescriptor.JavaType.MESSAGE) {
        Layout sub = layout.nested[slot];
        if (sub == null) {  // Struct/Value/ListValue: as JSON text, via the reflective parser
          UTF8String json = UTF8String.fromString(JSON.print(DynamicMessage.parseFrom(f.getMessageType(), in.readBytes())));
          if (layout.repeated[slot]) {
            list(row, slot).add(json);
          } else {
            row.clearPeers(layout.oneofPeers[slot]);
            row.setObject(slot, json);
          }
          continue;
        }
        MessageRow target;
        if (layout.repeated[slot]) {
          target = new MessageRow(sub, row.buf);
          list(row, slot).add(target);
        } else {
          row.clearPeers(layout.oneofPeers[slot]);
          Object seen = row.object(slot);
          // a singular message seen again is merged into the same row
          target = seen instanceof MessageRow ? (MessageRow) seen : new MessageRow(sub, row.buf);
          row.setObject(slot, target);
        }
        // as protobuf-java's readMessage: the nesting limit, then the length's
        int length = in.readVarint32();
        in.enter();
        int limit = in.pushLimit(length);
        readInto(sub, target, in);
        in.checkLastTagWas(0);
        in.leave();
        in.popLimit(limit);
      } else if (layout.repeated[slot]) {
        Object value = scalar(layout, slot, f, in);
        if (value != UNKNOWN) list(row, slot).add(value);
      } else {  // bytes
        byte[] bytes = in.readByteArray();
        row.clearPeers(layout.oneofPeers[slot]);
        row.setObject(slot, bytes);
      }
    }
  }

  /** A singular scalar into the row's bits, as it is on the wire (the last one read wins). */
  private static void scalarInto(Layout layout, int slot, MessageRow row, WireInput in) throws IOException {
    long bits;
    switch (layout.type[slot]) {
      case INT32: case UINT32: case ENUM: bits = in.readVarint32(); break;
      case SINT32: {
        int n = in.readVarint32();
        bits = (n >>> 1) ^ -(n & 1);
        break;
      }
      case SFIXED32: case FIXED32: case FLOAT: bits = in.readFixed32(); break;
      case INT64: case UINT64: bits = in.readVarint64(); break;
      case SINT64: {
        long n = in.readVarint64();
        bits = (n >>> 1) ^ -(n & 1);
        break;
      }
      case SFIXED64: case FIXED64: case DOUBLE: bits = in.readFixed64(); break;
      case BOOL: bits = in.readVarint64() != 0 ? 1 : 0; break;
      case STRING: {
        bits = in.readStringSpan(layout.utf8[slot]);
        if (bits == MessageRow.REPLACED) row.setObject(slot, in.replaced());
        break;
      }
      default:
        FieldDescriptor f = layout.fields[slot];
        throw new InvalidProtocolBufferException("unsupported field type " + f.getType() + " of " + f.getFullName());
    }
    if (layout.type[slot] == FieldDescriptor.Type.ENUM && layout.closedEnum[slot]
        && layout.enumNames[slot].get((int) bits) == null) {
      return;  // a closed enum's unknown number: an unknown field, the value before it stays
    }
    row.clearPeers(layout.oneofPeers[slot]);
    row.setBits(slot, bits);
  }

  @SuppressWarnings("unchecked")
  private static List<Object> list(MessageRow row, int slot) {
    Object seen = row.object(slot);
    if (seen instanceof List) return (List<Object>) seen;
    List<Object> list = new ArrayList<>();
    row.setObject(slot, list);
    return list;
  }

  /** A repeated field's element as Spark's value. */
  private static Object scalar(Layout layout, int slot, FieldDescriptor f, WireInput in) throws IOException {
    switch (layout.type[slot]) {
      case INT32: case UINT32: return in.readVarint32();
      case SINT32: {
        int n = in.readVarint32();
        return (n >>> 1) ^ -(n & 1);
      }
      case SFIXED32: case FIXED32: return in.readFixed32();
      case INT64: case UINT64: return in.readVarint64();
      case SINT64: {
        long n = in.readVarint64();
        return (n >>> 1) ^ -(n & 1);
      }
      case SFIXED64: case FIXED64: return in.readFixed64();
      case FLOAT: return Float.intBitsToFloat(in.readFixed32());
      case DOUBLE: return Double.longBitsToDouble(in.readFixed64());
      case BOOL: return in.readVarint64() != 0;
      case STRING: return in.readString(layout.utf8[slot]);
      case BYTES: return in.readByteArray();
      case ENUM: {
        int n = in.readVarint32();
        if (layout.closedEnum[slot] && layout.enumNames[slot].get(n) == null) return UNKNOWN;
        return layout.enumName(slot, n);
      }
      default:
        throw new InvalidProtocolBufferException("unsupported field type " + f.getType() + " of " + f.getFullName());
    }
  }

  /**
   * The decoder's result row {message, rowtime, error}: the message as Spark's internal row of
   * RowConverter's schema, its event time in microseconds, no error; or null when the event time
   * field is unset. The message's strings point into `bytes`, which must not change after.
   */
  static InternalRow read(Layout layout, byte[] bytes, int eventTimeField) throws IOException {
    MessageRow row = new MessageRow(layout, bytes);
    WireInput in = new WireInput(bytes);
    readInto(layout, row, in);
    in.checkLastTagWas(0);
    int ts = layout.slot(eventTimeField);
    if (ts < 0 || !(row.object(ts) instanceof MessageRow)) return null;
    MessageRow t = (MessageRow) row.object(ts);
    // through Instant, as Spark turns the reference path's Instant into microseconds (negative
    // nanos included); out of Instant's or a long's range, this throws: a message set aside
    Instant rowtime = Instant.ofEpochSecond(t.getLong(0), t.getInt(1));
    long micros = Math.addExact(Math.multiplyExact(rowtime.getEpochSecond(), 1_000_000L), rowtime.getNano() / 1000);
    finish(row);
    return new GenericInternalRow(new Object[] {row, micros, null});
  }

  /** Repeated fields' lists to Spark's arrays, in this row and the rows in it. */
  private static void finish(MessageRow row) {
    if (row.objects == null) return;
    Object[] objects = row.objects;
    for (int i = 0; i < objects.length; i++) {
      Object v = objects[i];
      if (v instanceof List) {
        Object[] out = ((List<?>) v).toArray();
        for (Object e : out) {
          if (e instanceof MessageRow) finish((MessageRow) e);
        }
        objects[i] = new GenericArrayData(out);
      } else if (v instanceof MessageRow) {
        finish((MessageRow) v);
      }
    }
  }

  /** Spark's value of a default: strings become UTF8Strings. */
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
