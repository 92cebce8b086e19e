package dev.daggers.runtime;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.api.java.UDF7;
import org.apache.spark.util.LongAccumulator;
import org.apache.spark.util.TaskCompletionListener;

/**
 * Writes the messages a stream sets aside to its dead-letter topic, from the task that decoded
 * them, so the topic is read once per batch.
 *
 * <p>Called as a SQL function only for rows whose decoding failed:
 * {@code name(reason, key, value, topic, partition, offset, timestampMs) -> false}. Each call
 * sends the message untouched (key and value, a tombstone stays one) with headers saying where it
 * came from and why ({@code dagger.errors.topic, .partition, .offset, .timestamp, .kind, .reason,
 * .job}, as Kafka Connect's {@code __connect.errors.*}). A task that sent anything flushes the
 * producer before it completes and fails if any send failed: the stage, and so the micro-batch,
 * finishes only after its dead letters are stored. A retried task may send some twice; the
 * headers' source coordinates identify them.
 *
 * <p>Counts per kind are Spark accumulators, merged on the driver from successful tasks only.
 */
public final class DeadLetters implements UDF7<String, byte[], byte[], String, Integer, Long, Long, Boolean> {
  private static final long serialVersionUID = 1L;

  public static final String HEADER_PREFIX = "dagger.errors.";
  /** The kinds, in the order of {@link #countsLine()}; the decoder's reasons decide the kind. */
  public static final String[] KINDS = {"tombstone", "no_event_time", "unparsable", "late"};

  // one producer per executor JVM and cluster: producers are thread-safe and batch across tasks
  private static final Map<String, Producer<byte[], byte[]>> PRODUCERS = new ConcurrentHashMap<>();
  // the first failed send of each running task attempt, reported when the task completes
  private static final Map<Long, AtomicReference<Exception>> FAILURES = new ConcurrentHashMap<>();

  private final TreeMap<String, String> producerConfig;
  private final String topic;
  private final byte[] job;
  private final LongAccumulator[] counts;
  // a rehearsal's (a standby warming its JVMs on records the job already read): count, send nothing
  private final boolean dry;

  public DeadLetters(Map<String, String> producerConfig, String topic, String job, LongAccumulator[] counts) {
    this(producerConfig, topic, job, counts, false);
  }

  public DeadLetters(Map<String, String> producerConfig, String topic, String job, LongAccumulator[] counts,
                     boolean dry) {
    if (counts.length != KINDS.length) throw new IllegalArgumentException("one counter per kind");
    this.producerConfig = new TreeMap<>(producerConfig);
    this.topic = topic;
    this.job = job.getBytes(StandardCharsets.UTF_8);
    this.counts = counts;
    this.dry = dry;
  }

  /** The kind of a decoder's reason (dev.daggers.runtime.ProtobufDecoder's messages). */
  public static String kindOf(String reason) {
    if (reason.startsWith(ProtobufDecoder.TOMBSTONE)) return KINDS[0];
    if (reason.startsWith(ProtobufDecoder.NO_EVENT_TIME)) return KINDS[1];
    if (reason.startsWith(LateRows.LATE)) return KINDS[3];
    return KINDS[2];
  }

  /** Dead letters counted so far, per kind (driver side: merged from finished tasks). */
  /**
   * The dead letters so far by kind, as one line "kind=n kind=n ...": what the driver reads after
   * each batch, in one call (walking a Java map from Python ends in an exception py4j converts,
   * ~10 ms a batch).
   */
  public String countsLine() {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < KINDS.length; i++) out.append(i == 0 ? "" : " ").append(KINDS[i]).append('=').append(counts[i].value());
    return out.toString();
  }

  @Override
  public Boolean call(String reason, byte[] key, byte[] value, String sourceTopic, Integer partition,
                      Long offset, Long timestampMs) {
    String kind = kindOf(reason);
    for (int i = 0; i < KINDS.length; i++) if (KINDS[i].equals(kind)) counts[i].add(1);
    if (dry) return Boolean.FALSE;
    List<Header> headers = new ArrayList<>(7);
    headers.add(header("topic", sourceTopic));
    headers.add(header("partition", String.valueOf(partition)));
    headers.add(header("offset", String.valueOf(offset)));
    headers.add(header("timestamp", String.valueOf(timestampMs)));
    headers.add(header("kind", kind));
    headers.add(header("reason", reason));
    headers.add(new RecordHeader(HEADER_PREFIX + "job", job));
    ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(topic, null, key, value, headers);
    AtomicReference<Exception> failure = taskFailure();
    producer().send(record, (metadata, e) -> {
      if (e != null) failure.compareAndSet(null, e);
    });
    return Boolean.FALSE;  // the row is not the analyst's
  }

  private static Header header(String name, String value) {
    return new RecordHeader(HEADER_PREFIX + name, value == null ? null : value.getBytes(StandardCharsets.UTF_8));
  }

  private Producer<byte[], byte[]> producer() {
    return PRODUCERS.computeIfAbsent(producerConfig.toString(), k -> {
      Properties props = new Properties();
      props.putAll(producerConfig);
      props.put("acks", "all");
      props.put("enable.idempotence", "true");
      props.put("linger.ms", "20");
      props.put("key.serializer", ByteArraySerializer.class.getName());
      props.put("value.serializer", ByteArraySerializer.class.getName());
      return new KafkaProducer<>(props);
    });
  }

  /** This task attempt's failure holder; on its first use the task gets a listener that flushes
   * the producer when the task ends and fails the task if a send failed. Outside a task (tests
   * calling in directly) each call flushes at once. */
  private AtomicReference<Exception> taskFailure() {
    TaskContext task = TaskContext.get();
    if (task == null) return new AtomicReference<>();
    long attempt = task.taskAttemptId();
    AtomicReference<Exception> existing = FAILURES.get(attempt);
    if (existing != null) return existing;
    AtomicReference<Exception> created = new AtomicReference<>();
    FAILURES.put(attempt, created);
    Producer<byte[], byte[]> producer = producer();
    task.addTaskCompletionListener(new TaskCompletionListener() {
      @Override
      public void onTaskCompletion(TaskContext context) {
        FAILURES.remove(attempt);
        producer.flush();
        Exception e = created.get();
        if (e != null) {
          throw new IllegalStateException("could not store dead letters on " + topic + ": " + e, e);
        }
      }
    });
    return created;
  }

  /** Close this writer's producer in this JVM (the driver's, when a run ends; an executor's
   * producers end with it). A later call opens a new one. */
  public void close() {
    Producer<byte[], byte[]> p = PRODUCERS.remove(producerConfig.toString());
    if (p != null) p.close(java.time.Duration.ofSeconds(10));
  }
}
