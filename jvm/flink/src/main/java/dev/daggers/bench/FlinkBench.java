package dev.daggers.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.SinkFunction;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;

import java.io.PrintStream;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The Flink side of `make bench`: a dagger's Flink SQL on Apache Flink 1.20 itself, over a Kafka
 * topic read from its start to its end offsets (flink-connector-kafka, bounded), messages decoded
 * by flink-protobuf with protoc's Java classes, S2Id as a Java function. One MiniCluster with as
 * many slots as the parallelism, started before any timing; each run is a fresh table
 * environment, and its time is from planning to the job's end, as the Spark side's `run
 * --available-now` is.
 *
 * <pre>
 * FlinkBench --bootstrap HOST:PORT --topic T --table NAME --message-class JAVA_CLASS
 *            --event-time-field NAME --watermark-delay-ms N --query SQL
 *            [--consumer KEY=VALUE,...] [--rowtime rowtime] [--parallelism 2] [--repeat 2]
 *            [--rows-out FILE]
 * </pre>
 * stdout: a JSON line per run {"run": i, "seconds": s, "rows": n}; the rows of the last run go to
 * FILE as JSON lines (timestamps as epoch milliseconds), for the bench to compare with Spark's.
 */
public final class FlinkBench {
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The sink's rows: the MiniCluster runs in this JVM, with this class loader. */
  static final ConcurrentLinkedQueue<Row> ROWS = new ConcurrentLinkedQueue<>();

  static final class Collect implements SinkFunction<Row> {
    private static final long serialVersionUID = 1L;

    @Override
    public void invoke(Row row, Context context) {
      ROWS.add(row);
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opts = options(args);
    int parallelism = Integer.parseInt(opts.getOrDefault("parallelism", "2"));
    int repeat = Integer.parseInt(opts.getOrDefault("repeat", "2"));
    Descriptor message = (Descriptor) Class.forName(opts.get("message-class")).getMethod("getDescriptor").invoke(null);
    String ddl = ddl(opts, message);
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
    Configuration conf = new Configuration();
    conf.set(RestOptions.BIND_PORT, "0");
    conf.set(TaskManagerOptions.NUM_TASK_SLOTS, parallelism);
    try (MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
        .setConfiguration(conf).setNumTaskManagers(1).setNumSlotsPerTaskManager(parallelism).build())) {
      cluster.start();
      URI rest = cluster.getRestAddress().get();
      List<String> columns = List.of();
      for (int run = 1; run <= repeat; run++) {
        ROWS.clear();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment(
            rest.getHost(), rest.getPort(), new Configuration());
        env.setParallelism(parallelism);
        long started = System.nanoTime();
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().setLocalTimeZone(ZoneOffset.UTC);
        tEnv.createTemporarySystemFunction("S2Id", S2Id.class);
        tEnv.executeSql(ddl);
        Table result = tEnv.sqlQuery(opts.get("query"));
        columns = result.getResolvedSchema().getColumnNames();
        tEnv.toDataStream(result).addSink(new Collect()).setParallelism(1);
        env.execute("dagger bench on Flink");
        double seconds = (System.nanoTime() - started) / 1e9;
        ObjectNode line = JSON.createObjectNode().put("run", run).put("seconds", seconds).put("rows", ROWS.size());
        out.println(JSON.writeValueAsString(line));
      }
      if (opts.containsKey("rows-out")) writeRows(Path.of(opts.get("rows-out")), columns);
    }
    System.exit(0);   // Flink's non-daemon threads would keep the JVM up
  }

  private static Map<String, String> options(String[] args) {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (!args[i].startsWith("--")) throw new IllegalArgumentException("expected --option value, got " + args[i]);
      opts.put(args[i].substring(2), args[i + 1]);
    }
    for (String required : List.of("bootstrap", "topic", "table", "message-class", "event-time-field", "query")) {
      if (!opts.containsKey(required)) throw new IllegalArgumentException("--" + required + " is required");
    }
    return opts;
  }

  /** The stream as a Flink table: every field of the message (flink-protobuf's types), rowtime
   * from the event-time field and its watermark, the topic read from its start to its end. */
  static String ddl(Map<String, String> opts, Descriptor message) {
    StringJoiner cols = new StringJoiner(",\n  ");
    for (FieldDescriptor f : message.getFields()) cols.add(quote(f.getName()) + " " + type(f, 0));
    String time = quote(opts.get("event-time-field"));
    String rowtime = quote(opts.getOrDefault("rowtime", "rowtime"));
    cols.add(rowtime + " AS CAST(TO_TIMESTAMP_LTZ(" + time + ".seconds * 1000 + " + time + ".nanos / 1000000, 3) AS TIMESTAMP(3))");
    long delayMs = Long.parseLong(opts.getOrDefault("watermark-delay-ms", "0"));
    cols.add("WATERMARK FOR " + rowtime + " AS " + rowtime + " - INTERVAL '" + delayMs / 1000.0 + "' SECOND");
    Map<String, String> with = new LinkedHashMap<>();
    with.put("connector", "kafka");
    with.put("topic", opts.get("topic"));
    with.put("properties.bootstrap.servers", opts.get("bootstrap"));
    with.put("properties.group.id", "dagger-bench-flink");
    with.put("scan.startup.mode", "earliest-offset");
    with.put("scan.bounded.mode", "latest-offset");
    // the consumer settings the Spark side reads with (--consumer k=v,k=v), so both clients fetch alike
    for (String kv : opts.getOrDefault("consumer", "").split(",")) {
      if (kv.isEmpty()) continue;
      String[] p = kv.split("=", 2);
      with.put("properties." + p[0], p[1]);
    }
    with.put("format", "protobuf");
    with.put("protobuf.message-class-name", opts.get("message-class"));
    StringJoiner props = new StringJoiner(",\n  ");
    with.forEach((k, v) -> props.add("'" + k + "' = '" + v.replace("'", "''") + "'"));
    return "CREATE TABLE " + quote(opts.get("table")) + " (\n  " + cols + "\n) WITH (\n  " + props + "\n)";
  }

  private static String quote(String name) {
    return "`" + name.replace("`", "``") + "`";
  }

  /** flink-protobuf's mapping: enums as STRING, maps as MAP, messages as ROW. */
  private static String type(FieldDescriptor f, int depth) {
    if (f.isMapField()) {
      Descriptor entry = f.getMessageType();
      return "MAP<" + type(entry.findFieldByName("key"), depth) + ", " + type(entry.findFieldByName("value"), depth) + ">";
    }
    String t;
    switch (f.getJavaType()) {
      case INT: t = "INT"; break;
      case LONG: t = "BIGINT"; break;
      case FLOAT: t = "FLOAT"; break;
      case DOUBLE: t = "DOUBLE"; break;
      case BOOLEAN: t = "BOOLEAN"; break;
      case STRING: case ENUM: t = "STRING"; break;
      case BYTE_STRING: t = "BYTES"; break;
      default:
        if (depth > 16) throw new IllegalArgumentException("message nesting too deep at " + f.getFullName());
        StringJoiner fields = new StringJoiner(", ", "ROW<", ">");
        for (FieldDescriptor g : f.getMessageType().getFields()) fields.add(quote(g.getName()) + " " + type(g, depth + 1));
        t = fields.toString();
    }
    return f.isRepeated() ? "ARRAY<" + t + ">" : t;
  }

  private static void writeRows(Path file, List<String> columns) throws Exception {
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      for (Row row : ROWS) {
        ObjectNode o = JSON.createObjectNode();
        for (int i = 0; i < columns.size(); i++) {
          Object v = row.getField(i);
          if (v instanceof LocalDateTime) v = ((LocalDateTime) v).toInstant(ZoneOffset.UTC).toEpochMilli();
          if (v instanceof Instant) v = ((Instant) v).toEpochMilli();
          o.putPOJO(columns.get(i), v);
        }
        w.write(JSON.writeValueAsString(o));
        w.write('\n');
      }
    }
  }
}
