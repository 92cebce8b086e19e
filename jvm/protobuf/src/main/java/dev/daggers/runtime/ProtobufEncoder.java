package dev.daggers.runtime;

import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A result row (a struct) as a protobuf message of one type, the row's columns mapped to the
 * message's fields by name (raystack/dagger's Kafka sink). Which columns map to which fields, and
 * whether their types fit, is checked before the job starts (dagger_runtime.sinks.kafka); here a
 * NULL leaves its field unset and an enum name the type lacks leaves it at its default.
 *
 * <p>Spark values to field types: numbers to any numeric field; a timestamp, or a ROW(seconds,
 * nanos) as the decoder reads it, to google.protobuf.Timestamp; a string to an enum by name; a
 * struct to a message; an array to a repeated field; an array of ROW(key, value), as the decoder
 * reads maps, or a map, to a map field.
 *
 * <p>A nested message whose fields are all defaults is left out, as the decoder reads an absent
 * message as its default instance.
 *
 * <p>Written straight to the wire with CodedOutputStream, as protobuf's own serializer would
 * (fields in number order, proto3 defaults left out, repeated numbers packed), without building a
 * DynamicMessage: the feeder and the Kafka sink encode on the hot path.
 */
public final class ProtobufEncoder implements UDF1<Row, byte[]> {
  private static final long serialVersionUID = 1L;
  private static final String TIMESTAMP = "google.protobuf.Timestamp";

  private final byte[] descriptorSet;
  private final String messageName;
  private transient Descriptor descriptor;
  // per message type and row schema: which row column feeds which field, in field-number order
  private transient Map<Descriptor, Map<StructType, int[][]>> plans;

  public ProtobufEncoder(byte[] descriptorSet, String messageName) {
    this.descriptorSet = descriptorSet;
    this.messageName = messageName;
  }

  Descriptor descriptor() {
    if (descriptor == null) descriptor = DescriptorSets.find(descriptorSet, messageName);
    return descriptor;
  }

  @Override
  public byte[] call(Row row) {
    if (row == null) return null;
    if (plans == null) plans = new IdentityHashMap<>();
    try {
      return message(descriptor(), row);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** [field index in d, column index in the row] pairs, by field number. */
  private int[][] plan(Descriptor d, StructType schema) {
    Map<StructType, int[][]> bySchema = plans.computeIfAbsent(d, k -> new java.util.HashMap<>());
    int[][] plan = bySchema.get(schema);
    if (plan != null) return plan;
    List<int[]> pairs = new ArrayList<>();
    StructField[] columns = schema.fields();
    for (int c = 0; c < columns.length; c++) {
      FieldDescriptor f = d.findFieldByName(columns[c].name());
      if (f != null) pairs.add(new int[] {f.getIndex(), c});
    }
    pairs.sort(Comparator.comparingInt(p -> d.getFields().get(p[0]).getNumber()));
    plan = pairs.toArray(new int[0][]);
    bySchema.put(schema, plan);
    return plan;
  }

  private byte[] message(Descriptor d, Row row) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(128);
    CodedOutputStream out = CodedOutputStream.newInstance(bytes, 256);
    StructType schema = row.schema();
    if (schema != null) {
      for (int[] p : plan(d, schema)) {
        Object v = row.get(p[1]);
        if (v != null) field(out, d.getFields().get(p[0]), v);
      }
    }
    out.flush();
    return bytes.toByteArray();
  }

  private void field(CodedOutputStream out, FieldDescriptor f, Object v) throws IOException {
    if (f.isMapField()) {
      FieldDescriptor k = f.getMessageType().findFieldByName("key");
      FieldDescriptor val = f.getMessageType().findFieldByName("value");
      for (Object[] kv : entries(v)) {
        if (kv[0] == null) continue;
        ByteArrayOutputStream entry = new ByteArrayOutputStream(32);
        CodedOutputStream e = CodedOutputStream.newInstance(entry, 64);
        single(e, k, kv[0], true);
        if (kv[1] != null) single(e, val, kv[1], true);
        e.flush();
        out.writeByteArray(f.getNumber(), entry.toByteArray());
      }
      return;
    }
    if (f.isRepeated()) {
      List<Object> items = list(v);
      if (f.isPacked()) {
        ByteArrayOutputStream packed = new ByteArrayOutputStream(8 * items.size());
        CodedOutputStream p = CodedOutputStream.newInstance(packed, 64);
        for (Object item : items) {
          if (item != null) scalarNoTag(p, f, item);
        }
        p.flush();
        if (packed.size() > 0) out.writeByteArray(f.getNumber(), packed.toByteArray());
        return;
      }
      for (Object item : items) {
        if (item != null) single(out, f, item, true);
      }
      return;
    }
    single(out, f, v, f.hasPresence() && f.getJavaType() != FieldDescriptor.JavaType.MESSAGE);
  }

  /** One value with its tag; a proto3 field without presence leaves its default out. */
  private void single(CodedOutputStream out, FieldDescriptor f, Object v, boolean always) throws IOException {
    int n = f.getNumber();
    switch (f.getType()) {
      case MESSAGE:
      case GROUP: {
        Descriptor m = f.getMessageType();
        byte[] body = TIMESTAMP.equals(m.getFullName()) && !(v instanceof Row) ? timestamp(v) : message(m, (Row) v);
        // the decoder reads an absent message as its default instance (as dagger does), so an
        // all-default message is written as absent: decode then encode gives the original bytes
        if (always || body.length > 0) out.writeByteArray(n, body);
        return;
      }
      case STRING: {
        String s = v.toString();
        if (always || !s.isEmpty()) out.writeString(n, s);
        return;
      }
      case BYTES: {
        byte[] b = (byte[]) v;
        if (always || b.length > 0) out.writeByteArray(n, b);
        return;
      }
      case ENUM: {
        Integer number = enumNumber(f, v);
        if (number == null || (!always && number == 0)) return;
        out.writeEnum(n, number);
        return;
      }
      case BOOL: {
        boolean b = (Boolean) v;
        if (always || b) out.writeBool(n, b);
        return;
      }
      default: {
        Number num = v instanceof BigDecimal ? (Number) ((BigDecimal) v).doubleValue() : (Number) v;
        if (!always && isZero(f, num)) return;
        out.writeTag(n, f.getLiteType().getWireType());
        scalarNoTag(out, f, num);
      }
    }
  }

  private static boolean isZero(FieldDescriptor f, Number v) {
    switch (f.getType()) {
      case FLOAT: return Float.floatToRawIntBits(v.floatValue()) == 0;
      case DOUBLE: return Double.doubleToRawLongBits(v.doubleValue()) == 0;
      default: return v.longValue() == 0;
    }
  }

  private static void scalarNoTag(CodedOutputStream out, FieldDescriptor f, Object v) throws IOException {
    if (f.getType() == FieldDescriptor.Type.ENUM) {
      Integer number = enumNumber(f, v);
      out.writeEnumNoTag(number == null ? 0 : number);
      return;
    }
    if (f.getType() == FieldDescriptor.Type.BOOL) {
      out.writeBoolNoTag((Boolean) v);
      return;
    }
    Number num = v instanceof BigDecimal ? (Number) ((BigDecimal) v).doubleValue() : (Number) v;
    switch (f.getType()) {
      case INT32: out.writeInt32NoTag(num.intValue()); return;
      case INT64: out.writeInt64NoTag(num.longValue()); return;
      case UINT32: out.writeUInt32NoTag(num.intValue()); return;
      case UINT64: out.writeUInt64NoTag(num.longValue()); return;
      case SINT32: out.writeSInt32NoTag(num.intValue()); return;
      case SINT64: out.writeSInt64NoTag(num.longValue()); return;
      case FIXED32: out.writeFixed32NoTag(num.intValue()); return;
      case FIXED64: out.writeFixed64NoTag(num.longValue()); return;
      case SFIXED32: out.writeSFixed32NoTag(num.intValue()); return;
      case SFIXED64: out.writeSFixed64NoTag(num.longValue()); return;
      case FLOAT: out.writeFloatNoTag(num.floatValue()); return;
      case DOUBLE: out.writeDoubleNoTag(num.doubleValue()); return;
      default: throw new IllegalArgumentException("not a number field: " + f.getFullName());
    }
  }

  private static Integer enumNumber(FieldDescriptor f, Object v) {
    if (v instanceof Number) return ((Number) v).intValue();
    EnumValueDescriptor e = f.getEnumType().findValueByName(v.toString());
    return e == null ? null : e.getNumber();  // not a value of the enum: the field keeps its default
  }

  private static byte[] timestamp(Object v) throws IOException {
    Instant t = v instanceof Timestamp ? ((Timestamp) v).toInstant()
        : v instanceof Instant ? (Instant) v
        : v instanceof java.time.LocalDateTime ? ((java.time.LocalDateTime) v).toInstant(java.time.ZoneOffset.UTC)
        : null;
    if (t == null) throw new IllegalArgumentException("expected a timestamp, got " + v.getClass().getName());
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(16);
    CodedOutputStream out = CodedOutputStream.newInstance(bytes, 32);
    if (t.getEpochSecond() != 0) out.writeInt64(1, t.getEpochSecond());
    if (t.getNano() != 0) out.writeInt32(2, t.getNano());
    out.flush();
    return bytes.toByteArray();
  }

  @SuppressWarnings("unchecked")
  private static List<Object> list(Object v) {
    if (v instanceof scala.collection.Seq) {
      return new ArrayList<>(CollectionConverters.asJava((scala.collection.Seq<Object>) v));
    }
    if (v instanceof List) return new ArrayList<>((List<Object>) v);
    if (v instanceof Object[]) return java.util.Arrays.asList((Object[]) v);
    throw new IllegalArgumentException("expected an array, got " + v.getClass().getName());
  }

  @SuppressWarnings("unchecked")
  private static List<Object[]> entries(Object v) {
    List<Object[]> out = new ArrayList<>();
    if (v instanceof scala.collection.Map) {
      for (Map.Entry<Object, Object> e : CollectionConverters.asJava((scala.collection.Map<Object, Object>) v).entrySet()) {
        out.add(new Object[] {e.getKey(), e.getValue()});
      }
      return out;
    }
    for (Object item : list(v)) {
      if (item instanceof Row) out.add(new Object[] {((Row) item).get(0), ((Row) item).get(1)});
    }
    return out;
  }
}
