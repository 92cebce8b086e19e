package dev.daggers.runtime;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.util.JsonFormat;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.catalyst.CatalystTypeConverters;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Decodes one Kafka value (protobuf bytes, or proto3 JSON text) into a row, in the JVM.
 *
 * Returns struct<message, rowtime, error>. rowtime is the event time, from the Timestamp field
 * whose NUMBER the job names (INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX). A message that does not
 * parse, or has no event time, never reaches the analyst's SQL as a default row with rowtime 0
 * (raystack/dagger's behaviour): it comes back with message = NULL and the reason in error, so
 * the runtime can count it and keep it aside.
 *
 * Two ways in: {@link #decode} gives Spark's internal row, read from the wire format by
 * {@link WireReader} (the runtime's path, a Catalyst expression: see Functions.registerDecoder);
 * {@link #call} gives a Row of Java objects through protobuf-java's DynamicMessage (a UDF, the
 * reference the tests compare with, and the way for JSON and proto2 groups).
 */
public final class ProtobufDecoder implements UDF1<Object, Row> {
  private static final long serialVersionUID = 2L;
  /** How the reasons of the two kinds that are not parse errors begin (DeadLetters.kindOf). */
  static final String TOMBSTONE = "empty (tombstone)";
  static final String NO_EVENT_TIME = "event time field ";

  private final String name;
  private final byte[] descriptorSet;
  private final String messageName;
  private final boolean json;
  private final int eventTimeField;
  // Descriptors are not serializable: each task's copy of the plan rebuilds them from the set's bytes.
  private transient Descriptor descriptor;
  private transient JsonFormat.Parser jsonParser;
  private transient WireReader.Layout layout;
  private transient boolean layoutChecked;
  private transient scala.Function1<Object, Object> toInternal;

  public ProtobufDecoder(String name, byte[] descriptorSet, String messageName, boolean json, int eventTimeField) {
    this.name = name;
    this.descriptorSet = descriptorSet;
    this.messageName = messageName;
    this.json = json;
    this.eventTimeField = eventTimeField;
    // fail at registration, not on the first message
    FieldDescriptor f = descriptor().findFieldByNumber(eventTimeField);
    if (f == null || f.getJavaType() != FieldDescriptor.JavaType.MESSAGE
        || !f.getMessageType().getFullName().equals("google.protobuf.Timestamp")) {
      throw new IllegalArgumentException(messageName + " has no google.protobuf.Timestamp field number "
          + eventTimeField);
    }
  }

  Descriptor descriptor() {
    if (descriptor == null) descriptor = DescriptorSets.find(descriptorSet, messageName);
    return descriptor;
  }

  /** struct<message, rowtime, error>: what both ways in return. */
  StructType resultType() {
    return DataTypes.createStructType(new StructField[] {
        DataTypes.createStructField("message", RowConverter.schema(descriptor()), true),
        DataTypes.createStructField("rowtime", DataTypes.TimestampType, true),
        DataTypes.createStructField("error", DataTypes.StringType, true)});
  }

  /** The registered name: how the decoder reads in a query plan. */
  @Override
  public String toString() {
    return name;
  }

  /** One Kafka value as Spark's internal row of resultType(). */
  public InternalRow decode(byte[] value) {
    if (value == null) return failed(TOMBSTONE + " message");
    if (!json) {
      if (!layoutChecked) {
        layout = WireReader.Layout.of(descriptor());
        layoutChecked = true;
      }
      if (layout != null) {
        try {
          InternalRow read = WireReader.read(layout, value, eventTimeField);
          return read == null ? failed(notSetReason()) : read;
        } catch (Exception e) {
          return failed(reason(e));
        }
      }
    }
    // JSON text, or a type with proto2 groups: DynamicMessage's Row, converted
    if (toInternal == null) toInternal = CatalystTypeConverters.createToCatalystConverter(resultType());
    Row row = call(value);
    try {
      return (InternalRow) toInternal.apply(row);
    } catch (ArithmeticException e) {  // an event time past a long of microseconds: set aside, as above
      return failed(reason(e));
    }
  }

  private static InternalRow failed(String reason) {
    return new GenericInternalRow(new Object[] {null, null, UTF8String.fromString(reason)});
  }

  /** One Kafka value as a Row of Java objects, through DynamicMessage. */
  @Override
  public Row call(Object value) {
    if (value == null) return RowFactory.create(null, null, TOMBSTONE + " message");
    try {
      if (json) {
        if (jsonParser == null) jsonParser = JsonFormat.parser();
        DynamicMessage.Builder b = DynamicMessage.newBuilder(descriptor());
        String text = value instanceof byte[]
            ? new String((byte[]) value, java.nio.charset.StandardCharsets.UTF_8) : value.toString();
        jsonParser.merge(text, b);
        return decoded(b.build());
      }
      return decoded(DynamicMessage.parseFrom(descriptor(), (byte[]) value));
    } catch (Exception e) {
      return RowFactory.create(null, null, reason(e));
    }
  }

  private static String reason(Exception e) {
    return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
  }

  private Row decoded(DynamicMessage m) {
    FieldDescriptor f = descriptor().findFieldByNumber(eventTimeField);
    java.time.Instant rowtime = RowConverter.eventTime(m, f);
    if (rowtime == null) return RowFactory.create(null, null, notSetReason());
    return RowFactory.create(RowConverter.toRow(m), rowtime, null);
  }

  private String notSetReason() {
    FieldDescriptor f = descriptor().findFieldByNumber(eventTimeField);
    return NO_EVENT_TIME + f.getName() + " (" + eventTimeField + ") is not set";
  }
}
