package dev.daggers.runtime;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import java.math.BigDecimal;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
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
 */
public final class ProtobufEncoder implements UDF1<Row, byte[]> {
  private static final long serialVersionUID = 1L;
  private static final String TIMESTAMP = "google.protobuf.Timestamp";

  private final byte[] descriptorSet;
  private final String messageName;
  private transient Descriptor descriptor;

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
    return message(descriptor(), row).toByteArray();
  }

  private static DynamicMessage message(Descriptor d, Row row) {
    DynamicMessage.Builder b = DynamicMessage.newBuilder(d);
    StructType schema = row.schema();
    StructField[] fields = schema == null ? new StructField[0] : schema.fields();
    for (int i = 0; i < fields.length; i++) {
      FieldDescriptor f = d.findFieldByName(fields[i].name());
      Object v = row.get(i);
      if (f == null || v == null) continue;
      set(b, f, v);
    }
    return b.build();
  }

  private static void set(DynamicMessage.Builder b, FieldDescriptor f, Object v) {
    if (f.isMapField()) {
      FieldDescriptor k = f.getMessageType().findFieldByName("key");
      FieldDescriptor val = f.getMessageType().findFieldByName("value");
      for (Object[] kv : entries(v)) {
        Object key = convert(k, kv[0]);
        Object value = kv[1] == null ? null : convert(val, kv[1]);
        if (key == null) continue;
        DynamicMessage.Builder e = DynamicMessage.newBuilder(f.getMessageType()).setField(k, key);
        if (value != null) e.setField(val, value);
        b.addRepeatedField(f, e.build());
      }
      return;
    }
    if (f.isRepeated()) {
      for (Object item : list(v)) {
        Object value = item == null ? null : convert(f, item);
        if (value != null) b.addRepeatedField(f, value);
      }
      return;
    }
    Object value = convert(f, v);
    if (value != null) b.setField(f, value);
  }

  private static List<Object> list(Object v) {
    if (v instanceof scala.collection.Seq) {
      return new ArrayList<>(CollectionConverters.asJava((scala.collection.Seq<Object>) v));
    }
    if (v instanceof List) return new ArrayList<>((List<Object>) v);
    if (v instanceof Object[]) return java.util.Arrays.asList((Object[]) v);
    throw new IllegalArgumentException("expected an array, got " + v.getClass().getName());
  }

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

  private static Object convert(FieldDescriptor f, Object v) {
    switch (f.getJavaType()) {
      case INT: return ((Number) v).intValue();
      case LONG: return ((Number) v).longValue();
      case FLOAT: return ((Number) v).floatValue();
      case DOUBLE: return v instanceof BigDecimal ? ((BigDecimal) v).doubleValue() : ((Number) v).doubleValue();
      case BOOLEAN: return v;
      case STRING: return v.toString();
      case BYTE_STRING: return ByteString.copyFrom((byte[]) v);
      case ENUM: {
        EnumValueDescriptor e = v instanceof Number
            ? f.getEnumType().findValueByNumber(((Number) v).intValue())
            : f.getEnumType().findValueByName(v.toString());
        return e;  // null: not a value of the enum; the field keeps its default
      }
      case MESSAGE:
      default: {
        Descriptor m = f.getMessageType();
        if (TIMESTAMP.equals(m.getFullName()) && !(v instanceof Row)) return timestamp(m, v);
        return message(m, (Row) v);
      }
    }
  }

  private static DynamicMessage timestamp(Descriptor m, Object v) {
    Instant t = v instanceof Timestamp ? ((Timestamp) v).toInstant()
        : v instanceof Instant ? (Instant) v
        : v instanceof java.time.LocalDateTime ? ((java.time.LocalDateTime) v).toInstant(java.time.ZoneOffset.UTC)
        : null;
    if (t == null) throw new IllegalArgumentException("expected a timestamp, got " + v.getClass().getName());
    return DynamicMessage.newBuilder(m)
        .setField(m.findFieldByName("seconds"), t.getEpochSecond())
        .setField(m.findFieldByName("nanos"), t.getNano())
        .build();
  }
}
