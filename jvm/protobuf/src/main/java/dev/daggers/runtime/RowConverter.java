package dev.daggers.runtime;

import com.google.protobuf.ByteString;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Maps a protobuf message type to a Spark schema, and messages to rows of that schema.
 *
 * The mapping is raystack/dagger's, so analysts' queries move over unchanged
 * (docs/reference/udf-contracts.md section 8): enums are their value names; every
 * google.protobuf.Timestamp field is a ROW(seconds, nanos) (only the appended rowtime column is a
 * TIMESTAMP); map fields are ARRAYs of ROW(key, value); repeated fields are ARRAYs; absent fields
 * carry proto3 defaults and absent messages are rows of defaults, never NULL; uint32 keeps its 32
 * bits in an INT and uint64 its 64 bits in a BIGINT. One difference: Struct, Value and ListValue
 * are JSON text (dagger drops them as NULL).
 */
final class RowConverter {
  private static final int MAX_DEPTH = 16;
  private static final Set<String> JSON_TYPES = Set.of(
      "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue");
  private static final JsonFormat.Printer JSON = JsonFormat.printer().omittingInsignificantWhitespace();

  private RowConverter() {}

  static StructType schema(Descriptor d) {
    return schema(d, 0, d.getFullName());
  }

  private static StructType schema(Descriptor d, int depth, String path) {
    if (depth > MAX_DEPTH) {
      throw new IllegalArgumentException("message nesting deeper than " + MAX_DEPTH
          + " levels (a recursive message?) at " + path);
    }
    List<StructField> fields = new ArrayList<>();
    for (FieldDescriptor f : d.getFields()) {
      fields.add(DataTypes.createStructField(f.getName(), fieldType(f, depth, path + "." + f.getName()), true));
    }
    return DataTypes.createStructType(fields);
  }

  private static DataType fieldType(FieldDescriptor f, int depth, String path) {
    if (f.isMapField()) {
      Descriptor entry = f.getMessageType();
      return DataTypes.createArrayType(DataTypes.createStructType(new StructField[] {
          DataTypes.createStructField("key", valueType(entry.findFieldByName("key"), depth, path), true),
          DataTypes.createStructField("value", valueType(entry.findFieldByName("value"), depth, path), true)}),
          true);
    }
    DataType t = valueType(f, depth, path);
    return f.isRepeated() ? DataTypes.createArrayType(t, true) : t;
  }

  private static DataType valueType(FieldDescriptor f, int depth, String path) {
    switch (f.getJavaType()) {
      case INT: return DataTypes.IntegerType;
      case LONG: return DataTypes.LongType;
      case FLOAT: return DataTypes.FloatType;
      case DOUBLE: return DataTypes.DoubleType;
      case BOOLEAN: return DataTypes.BooleanType;
      case STRING: return DataTypes.StringType;
      case BYTE_STRING: return DataTypes.BinaryType;
      case ENUM: return DataTypes.StringType;
      case MESSAGE:
      default:
        Descriptor m = f.getMessageType();
        String name = m.getFullName();
        if (JSON_TYPES.contains(name)) return DataTypes.StringType;
        return schema(m, depth + 1, path);
    }
  }

  /** The event time of a message: its Timestamp field with that number, or null when unset. */
  static Instant eventTime(Message m, FieldDescriptor field) {
    if (!m.hasField(field)) return null;
    Message ts = (Message) m.getField(field);
    Descriptor d = ts.getDescriptorForType();
    long seconds = (Long) ts.getField(d.findFieldByName("seconds"));
    int nanos = (Integer) ts.getField(d.findFieldByName("nanos"));
    return Instant.ofEpochSecond(seconds, nanos);
  }

  static Row toRow(Message m) {
    List<FieldDescriptor> fs = m.getDescriptorForType().getFields();
    Object[] values = new Object[fs.size()];
    for (int i = 0; i < values.length; i++) values[i] = field(m, fs.get(i));
    return RowFactory.create(values);
  }

  private static Object field(Message m, FieldDescriptor f) {
    if (f.isMapField()) {
      FieldDescriptor k = f.getMessageType().findFieldByName("key");
      FieldDescriptor v = f.getMessageType().findFieldByName("value");
      int n = m.getRepeatedFieldCount(f);
      List<Object> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        Message e = (Message) m.getRepeatedField(f, i);
        out.add(RowFactory.create(value(k, e.getField(k)), value(v, e.getField(v))));
      }
      return out;
    }
    if (f.isRepeated()) {
      int n = m.getRepeatedFieldCount(f);
      List<Object> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) out.add(value(f, m.getRepeatedField(f, i)));
      return out;
    }
    // an absent message reads as its default instance (a row of defaults), as in dagger
    return value(f, m.getField(f));
  }

  private static Object value(FieldDescriptor f, Object v) {
    switch (f.getJavaType()) {
      case ENUM: return ((EnumValueDescriptor) v).getName();
      case BYTE_STRING: return ((ByteString) v).toByteArray();
      case MESSAGE: {
        Message msg = (Message) v;
        String name = msg.getDescriptorForType().getFullName();
        if (JSON_TYPES.contains(name)) {
          try {
            return JSON.print(msg);
          } catch (Exception e) {
            return null;
          }
        }
        return toRow(msg);
      }
      default:
        return v;
    }
  }
}
