package dev.daggers.runtime;

import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.util.JsonFormat;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * Decodes one Kafka value (protobuf bytes, or proto3 JSON text) into a row, in the JVM.
 *
 * Returns struct<message, rowtime, error>. rowtime is the event time, from the Timestamp field
 * whose NUMBER the job names (INPUT_SCHEMA_EVENT_TIMESTAMP_FIELD_INDEX). A message that does not
 * parse, or has no event time, never reaches the analyst's SQL as a default row with rowtime 0
 * (raystack/dagger's behaviour): it comes back with message = NULL and the reason in error, so
 * the runtime can count it and keep it aside.
 */
public final class ProtobufDecoder implements UDF1<Object, Row> {
  private static final long serialVersionUID = 1L;
  /** How the reasons of the two kinds that are not parse errors begin (DeadLetters.kindOf). */
  static final String TOMBSTONE = "empty (tombstone)";
  static final String NO_EVENT_TIME = "event time field ";

  private final byte[] descriptorSet;
  private final String messageName;
  private final boolean json;
  private final int eventTimeField;
  private final boolean reflective;  // DynamicMessage instead of WireReader: the reference the tests compare with
  // Descriptors are not serializable: each executor rebuilds them once from the set's bytes.
  private transient Descriptor descriptor;
  private transient JsonFormat.Parser jsonParser;
  private transient WireReader.Layout layout;
  private transient boolean layoutChecked;

  public ProtobufDecoder(byte[] descriptorSet, String messageName, boolean json, int eventTimeField) {
    this(descriptorSet, messageName, json, eventTimeField, false);
  }

  public ProtobufDecoder(byte[] descriptorSet, String messageName, boolean json, int eventTimeField,
                         boolean reflective) {
    this.reflective = reflective;
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
      if (!layoutChecked) {
        layout = reflective ? null : WireReader.Layout.of(descriptor());
        layoutChecked = true;
      }
      if (layout != null) {
        Object[] read = WireReader.read(layout, (byte[]) value, eventTimeField);
        if (read[1] == null) return notSet();
        return RowFactory.create(read[0], read[1], null);
      }
      return decoded(DynamicMessage.parseFrom(descriptor(), (byte[]) value));
    } catch (Exception e) {
      String reason = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      return RowFactory.create(null, null, reason);
    }
  }

  private Row decoded(DynamicMessage m) {
    FieldDescriptor f = descriptor().findFieldByNumber(eventTimeField);
    java.time.Instant rowtime = RowConverter.eventTime(m, f);
    if (rowtime == null) return notSet();
    return RowFactory.create(RowConverter.toRow(m), rowtime, null);
  }

  private Row notSet() {
    FieldDescriptor f = descriptor().findFieldByNumber(eventTimeField);
    return RowFactory.create(null, null, NO_EVENT_TIME + f.getName() + " (" + eventTimeField + ") is not set");
  }
}
