package dev.daggers.runtime;

import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.objects.Invoke;
import org.apache.spark.sql.types.AbstractDataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.ObjectType;
import org.apache.spark.sql.types.StructType;
import scala.Function1;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;

/** Entry points called from Python (py4j). */
public final class Functions {
  private Functions() {}

  /** Spark schema (JSON) of a message type, as the decoder produces it. */
  public static String schemaJson(byte[] descriptorSet, String messageName) {
    return RowConverter.schema(DescriptorSets.find(descriptorSet, messageName)).json();
  }

  /**
   * Registers a decoder {@code name(value) -> struct<message, rowtime, error>} for one message
   * type. format is "PROTO" (binary values) or "JSON" (proto3 JSON text); eventTimeField is the
   * protobuf field number of the event time. Returns the result type (JSON).
   */
  public static String registerDecoder(SparkSession spark, String name, byte[] descriptorSet,
                                       String messageName, String format, int eventTimeField) {
    return registerDecoder(spark, name, descriptorSet, messageName, format, eventTimeField, "wire");
  }

  /**
   * reader "wire": a Catalyst expression calling ProtobufDecoder.decode, which writes Spark's
   * internal rows (the runtime's path: a UDF's Row of Java objects cost more to convert than to
   * read); "reflective": a UDF over DynamicMessage, the reference the tests compare with.
   */
  public static String registerDecoder(SparkSession spark, String name, byte[] descriptorSet,
                                       String messageName, String format, int eventTimeField, String reader) {
    ProtobufDecoder decoder = new ProtobufDecoder(name, descriptorSet, messageName, "JSON".equalsIgnoreCase(format),
        eventTimeField);
    StructType result = decoder.resultType();
    if ("reflective".equals(reader)) {
      spark.udf().register(name, org.apache.spark.sql.functions.udf(decoder, result).asNondeterministic());
      return result.json();
    }
    if (!"wire".equals(reader)) throw new IllegalArgumentException("reader is wire or reflective, not " + reader);
    Expression target = Literal.create(decoder, new ObjectType(ProtobufDecoder.class));
    Seq<AbstractDataType> binary = CollectionConverters.asScala(List.<AbstractDataType>of(DataTypes.BinaryType)).toList();
    Function1<Seq<Expression>, Expression> builder = args -> {
      if (args.size() != 1) throw new IllegalArgumentException(name + " takes one argument, the message's bytes");
      // Nondeterministic on purpose: Spark would otherwise push the filters on the decoded struct
      // (error IS NULL, the analyst's WHERE) below the projection and call the decoder once per
      // predicate and once more for the row. As it is, each message is decoded exactly once.
      // propagateNull off: a null value (a tombstone) is a row with its reason, not a null.
      return new Invoke(target, "decode", result, args, binary, false, true, false);
    };
    spark.sessionState().functionRegistry().createOrReplaceTempFunction(name, builder, "java_udf");
    return result.json();
  }

  /**
   * Registers an encoder UDF {@code name(struct) -> binary}: the struct's fields written as a
   * message of one type, by field name (the Kafka sink's PROTO format).
   */
  public static void registerEncoder(SparkSession spark, String name, byte[] descriptorSet, String messageName) {
    ProtobufEncoder encoder = new ProtobufEncoder(descriptorSet, messageName);
    encoder.descriptor();  // fail here, not in a task, if the message is not in the set
    spark.udf().register(name, encoder, DataTypes.BinaryType);
  }

  /**
   * Registers {@code name(reason, key, value, topic, partition, offset, timestampMs) -> false}: the
   * message sent to a dead-letter topic from the task that decoded it (see DeadLetters). Returns
   * the writer, whose countsLine() the driver reads after each batch.
   */
  public static DeadLetters registerDeadLetters(SparkSession spark, String name, java.util.Map<String, String> producerConfig,
                                                String topic, String job) {
    return registerDeadLetters(spark, name, producerConfig, topic, job, false);
  }

  /** As above; a dry one counts its dead letters and sends none (a standby's rehearsal). */
  public static DeadLetters registerDeadLetters(SparkSession spark, String name, java.util.Map<String, String> producerConfig,
                                                String topic, String job, boolean dry) {
    org.apache.spark.util.LongAccumulator[] counts = new org.apache.spark.util.LongAccumulator[DeadLetters.KINDS.length];
    for (int i = 0; i < counts.length; i++) {
      counts[i] = spark.sparkContext().longAccumulator(name + "." + DeadLetters.KINDS[i]);
    }
    DeadLetters writer = new DeadLetters(producerConfig, topic, job, counts, dry);
    // Nondeterministic: Spark must call it exactly where it stands, once per row it reaches.
    spark.udf().register(name, org.apache.spark.sql.functions.udf(writer, DataTypes.BooleanType).asNondeterministic());
    return writer;
  }

  /**
   * Registers {@code name(eventTimeMs) -> reason or null}: whether the job's window aggregation
   * will drop the message as late (see LateRows), for the query whose checkpoint is `checkpoint`.
   */
  public static void registerLateRows(SparkSession spark, String name, String checkpoint, long sizeMs, long slideMs) {
    // Nondeterministic: it depends on the task's batch, so Spark must not move or fold it
    spark.udf().register(name, org.apache.spark.sql.functions.udf(new LateRows(checkpoint, sizeMs, slideMs),
        DataTypes.StringType).asNondeterministic());
  }

  /** Registers {@code name(value, seconds) -> binary}: the Timestamp field `field` moved by seconds. */
  public static void registerTimeShift(SparkSession spark, String name, int field) {
    spark.udf().register(name, new TimeShift(field), DataTypes.BinaryType);
  }
}
