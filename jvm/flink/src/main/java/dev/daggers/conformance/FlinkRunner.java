package dev.daggers.conformance;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import com.google.protobuf.CodedInputStream;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.types.DataType;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs Flink-dialect SQL queries on Apache Flink 1.20 itself, over files of length-delimited
 * protobuf messages, and prints the result rows as JSON: the reference side of the differential
 * conformance suite (tests/test_conformance_flink.py).
 *
 * <pre>
 * FlinkRunner --descriptor-set D --table NAME=FILE,MESSAGE,EVENT_TIME_FIELD [--table ...]
 *             [--watermark-delay-ms N] --query SQL
 *                               one query: a JSON line per result row, exit 0; or one
 *                               {"error": "..."} line and exit 2 (Flink refused it, or bad input)
 * FlinkRunner CASES.json        many cases, one JVM and one MiniCluster; one JSON line per case:
 *                               {"id": ..., "rows": [{column: value, ...}, ...]} or {"id": ..., "error": "..."}
 * CASES.json = {"descriptor_set": "protos/descriptors/x.desc",
 *               "cases": [{"id": "...", "query": "SELECT ...",
 *                          "tables": [{"name": "t", "input_file": "t.bin", "message": "pkg.Msg",
 *                                      "event_time_field": "event_timestamp", "watermark_delay_ms": 0}]}]}
 *   (a case may give one table's keys flat instead of "tables", with "table" for its name)
 * </pre>
 *
 * Rows follow raystack/dagger's layout, as our Spark decoder does: enums are their value names,
 * google.protobuf.Timestamp is ROW(seconds BIGINT, nanos INT), repeated fields are ARRAYs, maps
 * are ARRAY&lt;ROW&lt;key, value&gt;&gt;, absent fields and messages carry proto3 defaults; `rowtime` is
 * a TIMESTAMP(3) from the event-time field, with a watermark `rowtime - delay`. The input is
 * bounded, so every window closes at its end, as in `dagger preview`. DistinctCount, of dagger's
 * UDFs, is registered (DistinctCount.java); the others are not. A query's changelog
 * (retractions of a non-windowed GROUP BY) is applied: the rows printed are the final table.
 * Flink's watermark moves as the messages are read (it is emitted as soon as it advances by more
 * than the 200 ms auto-watermark interval), so a message further behind than the delay is late
 * and dropped by windows, as on a stream. Timestamps print as ISO-8601 UTC, numbers as numbers.
 *
 * Bad input to the runner (its cases file, the descriptor set, its options) is one {"error"} line
 * and exit code 2. In a cases file, a case that cannot be set up (a missing input file, an unknown
 * message or event-time field: "bad case: ...") or that Flink refuses is that case's "error", and
 * the next case runs; a case over its time limit (120 s) has its job cancelled.
 */
public final class FlinkRunner {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  private static final long CASE_TIMEOUT_S = Long.getLong("conformance.case.timeout.s", 120);

  private final Map<String, Descriptor> messages;
  private final StreamExecutionEnvironment env;
  private final MiniCluster cluster;
  /** Decoded inputs, kept across cases: most cases read the same few files. */
  private final Map<String, List<Row>> decoded = new HashMap<>();
  private ExecutorService worker = newWorker();

  private FlinkRunner(Map<String, Descriptor> messages, StreamExecutionEnvironment env, MiniCluster cluster) {
    this.messages = messages;
    this.env = env;
    this.cluster = cluster;
  }

  private static ExecutorService newWorker() {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "case");
      t.setDaemon(true);
      return t;
    });
  }

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
    boolean single = args.length > 0 && args[0].startsWith("--");
    JsonNode spec = single ? singleCase(out, args) : casesFile(out, args);
    Map<String, Descriptor> messages;
    try {
      messages = loadDescriptors(Files.readAllBytes(Path.of(spec.get("descriptor_set").asText())));
    } catch (IOException | IllegalArgumentException e) {
      fail(out, "descriptor set " + spec.get("descriptor_set").asText() + ": " + e.getMessage());
      return;
    }
    int parallelism = Integer.getInteger("conformance.parallelism", 2);
    // One MiniCluster for every case: a local environment would start one per job (a second each).
    Configuration clusterConf = new Configuration();
    clusterConf.set(RestOptions.BIND_PORT, "0");
    clusterConf.set(TaskManagerOptions.NUM_TASK_SLOTS, parallelism);
    int exit = 0;
    try (MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
        .setConfiguration(clusterConf).setNumTaskManagers(1).setNumSlotsPerTaskManager(parallelism).build())) {
      cluster.start();
      URI rest = cluster.getRestAddress().get();
      StreamExecutionEnvironment env = StreamExecutionEnvironment.createRemoteEnvironment(
          rest.getHost(), rest.getPort(), new Configuration());
      env.setParallelism(parallelism);
      FlinkRunner runner = new FlinkRunner(messages, env, cluster);
      for (JsonNode c : spec.get("cases")) {
        ObjectNode result = runner.runCase(c);
        if (!single) {
          out.println(JSON.writeValueAsString(result));
        } else if (result.has("error")) {
          out.println(NODES.objectNode().put("error", result.get("error").asText()));
          exit = 2;
        } else {
          for (JsonNode row : result.get("rows")) out.println(JSON.writeValueAsString(row));
        }
      }
      runner.worker.shutdownNow();
    }
    System.exit(exit);   // Flink's non-daemon threads (RPC, netty) would keep the JVM up
  }

  private static JsonNode casesFile(PrintStream out, String[] args) {
    if (args.length != 1) fail(out, "usage: FlinkRunner CASES.json, or FlinkRunner --descriptor-set D "
        + "--table NAME=FILE,MESSAGE,EVENT_TIME_FIELD [--watermark-delay-ms N] --query SQL");
    JsonNode spec = null;
    try {
      spec = JSON.readTree(Path.of(args[0]).toFile());
    } catch (IOException e) {
      fail(out, "cannot read the cases file " + args[0] + ": " + e.getMessage());
    }
    if (spec == null || !spec.path("descriptor_set").isTextual() || !spec.path("cases").isArray()) {
      fail(out, args[0] + ": expected {\"descriptor_set\": PATH, \"cases\": [...]}");
    }
    return spec;
  }

  /** The command line of one query, as a cases file of one case. */
  private static JsonNode singleCase(PrintStream out, String[] args) {
    ObjectNode c = NODES.objectNode().put("id", "query");
    ArrayNode tables = c.putArray("tables");
    String descriptors = null;
    long delay = 0;
    for (int i = 0; i < args.length; i++) {
      if (i + 1 == args.length) fail(out, args[i] + " needs a value");
      String value = args[++i];
      switch (args[i - 1]) {
        case "--descriptor-set": descriptors = value; break;
        case "--query": c.put("query", value); break;
        case "--watermark-delay-ms":
          try {
            delay = Long.parseLong(value);
          } catch (NumberFormatException e) {
            fail(out, "--watermark-delay-ms " + value + ": not a number of milliseconds");
          }
          break;
        case "--table": {
          String[] nameRest = value.split("=", 2);
          String[] parts = nameRest.length == 2 ? nameRest[1].split(",") : new String[0];
          if (parts.length != 3) fail(out, "--table " + value + ": expected NAME=FILE,MESSAGE,EVENT_TIME_FIELD");
          tables.addObject().put("name", nameRest[0]).put("input_file", parts[0]).put("message", parts[1])
              .put("event_time_field", parts[2]);
          break;
        }
        default: fail(out, "unknown option " + args[i - 1]);
      }
    }
    if (descriptors == null || !c.has("query") || tables.isEmpty()) {
      fail(out, "--descriptor-set, --table and --query are required");
    }
    for (JsonNode t : tables) ((ObjectNode) t).put("watermark_delay_ms", delay);
    ObjectNode spec = NODES.objectNode().put("descriptor_set", descriptors);
    spec.putArray("cases").add(c);
    return spec;
  }

  private static void fail(PrintStream out, String message) {
    out.println(NODES.objectNode().put("error", message));
    System.exit(2);
  }

  /**
   * One case: its tables registered in a fresh table environment, the query run, the rows. All of
   * it on the worker thread (the planner keeps Calcite metadata providers in thread-locals), under
   * a time limit.
   */
  private ObjectNode runCase(JsonNode c) {
    ObjectNode result = NODES.objectNode();
    result.set("id", c.path("id"));
    if (!c.path("query").isTextual()) return result.put("error", "bad case: it has no \"query\"");
    Future<List<ObjectNode>> rows = worker.submit(() -> {
      StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
      tEnv.getConfig().setLocalTimeZone(ZoneOffset.UTC);
      // the dagger UDFs Flink can have cheaply, with raystack/dagger's semantics
      tEnv.createTemporarySystemFunction("DistinctCount", DistinctCount.class);
      JsonNode tables = c.has("tables") ? c.get("tables") : JSON.createArrayNode().add(c);
      for (JsonNode t : tables) register(tEnv, t);
      return query(tEnv, c.get("query").asText());
    });
    try {
      result.set("rows", JSON.valueToTree(rows.get(CASE_TIMEOUT_S, TimeUnit.SECONDS)));
    } catch (TimeoutException e) {
      // the case's job cancelled, and a new worker for the next case should this one stay stuck
      rows.cancel(true);
      try {
        for (var job : cluster.listJobs().get()) {
          if (!job.getJobState().isGloballyTerminalState()) cluster.cancelJob(job.getJobId()).get();
        }
      } catch (Exception ignored) {
        // the job may have ended meanwhile
      }
      worker.shutdownNow();
      worker = newWorker();
      result.put("error", "timed out after " + CASE_TIMEOUT_S + " s");
    } catch (java.util.concurrent.ExecutionException e) {
      Throwable cause = e.getCause();
      result.put("error", (cause instanceof BadCase ? "bad case: " : "") + rootMessage(cause));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      result.put("error", "interrupted");
    }
    return result;
  }

  /** A case the runner cannot set up (a missing file, an unknown message or field). */
  private static final class BadCase extends RuntimeException {
    BadCase(String message) {
      super(message);
    }
  }

  /** The query's final table: inserts added, retractions (-U, -D) removed. */
  private static List<ObjectNode> query(StreamTableEnvironment tEnv, String sql) throws Exception {
    TableResult result = tEnv.executeSql(sql);
    List<Column> columns = result.getResolvedSchema().getColumns();
    List<ObjectNode> rows = new ArrayList<>();
    try (CloseableIterator<Row> it = result.collect()) {
      while (it.hasNext()) {
        Row row = it.next();
        ObjectNode json = NODES.objectNode();
        for (int i = 0; i < columns.size(); i++) json.set(columns.get(i).getName(), toJson(row.getField(i)));
        RowKind kind = row.getKind();
        if (kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER) {
          rows.add(json);
        } else if (!rows.remove(json)) {
          throw new IllegalStateException("a retraction of a row never emitted: " + json);
        }
      }
    }
    return rows;
  }

  private static String rootMessage(Throwable e) {
    // the planner's messages are on the outermost exceptions; a job's failure on the innermost
    StringBuilder text = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.util.concurrent.ExecutionException) continue;
      String m = t.getMessage();
      if (m != null && !text.toString().contains(m)) text.append(text.length() == 0 ? "" : "\ncaused by: ").append(m);
      if (t.getCause() == t) break;
    }
    return text.length() == 0 ? e.toString() : text.toString();
  }

  // ---------------------------------------------------------------------------------- inputs

  /** A table of decoded messages with rowtime and its watermark. */
  private void register(StreamTableEnvironment tEnv, JsonNode t) throws IOException {
    String name = text(t, "table", "name");
    String file = text(t, "input_file");
    String message = text(t, "message");
    String eventTime = text(t, "event_time_field");
    long delayMs = t.path("watermark_delay_ms").asLong(0);
    Descriptor d = messages.get(message);
    if (d == null) throw new BadCase("message " + message + " is not in the descriptor set");
    FieldDescriptor timeField = d.findFieldByName(eventTime);
    if (timeField == null && eventTime.matches("\\d+")) timeField = d.findFieldByNumber(Integer.parseInt(eventTime));
    if (timeField == null || timeField.isRepeated() || timeField.getJavaType() != FieldDescriptor.JavaType.MESSAGE
        || !timeField.getMessageType().getFullName().equals("google.protobuf.Timestamp")) {
      throw new BadCase(message + " has no google.protobuf.Timestamp field " + eventTime);
    }
    String key = file + "\u0000" + message + "\u0000" + timeField.getNumber();
    List<Row> rows = decoded.get(key);
    if (rows == null) {
      if (!Files.isReadable(Path.of(file))) throw new BadCase("cannot read the input file " + file);
      rows = decode(Path.of(file), d, timeField);
      decoded.put(key, rows);
    }
    TypeInformation<Row> type = rowType(d, true);
    DataStream<Row> stream = env.fromCollection(rows, type);
    // every column declared (a declared schema replaces the derived one), rowtime as TIMESTAMP(3)
    Schema schema = Schema.newBuilder()
        .fromRowDataType(rowDataType(d, true))
        .watermark("rowtime", "rowtime - INTERVAL '" + BigDecimal.valueOf(delayMs, 3).toPlainString() + "' SECOND")
        .build();
    tEnv.createTemporaryView(name, tEnv.fromDataStream(stream, schema));
  }

  private static String text(JsonNode node, String... keys) {
    for (String k : keys) if (node.path(k).isTextual() || node.path(k).isNumber()) return node.get(k).asText();
    throw new BadCase("a table lacks \"" + keys[0] + "\"");
  }

  /** Java's writeDelimitedTo framing; a message without event time is left out, as in preview. */
  private static List<Row> decode(Path file, Descriptor d, FieldDescriptor timeField) throws IOException {
    List<Row> rows = new ArrayList<>();
    try (InputStream in = Files.newInputStream(file)) {
      CodedInputStream coded = CodedInputStream.newInstance(in);
      coded.setSizeLimit(Integer.MAX_VALUE);
      int position = 0;
      while (!coded.isAtEnd()) {
        position++;
        byte[] bytes = coded.readByteArray();
        DynamicMessage m;
        try {
          m = DynamicMessage.parseFrom(d, bytes);
        } catch (IOException e) {
          continue;   // preview skips it too, and says so; the suite writes none
        }
        if (!m.hasField(timeField)) continue;
        Message ts = (Message) m.getField(timeField);
        Descriptor tsd = ts.getDescriptorForType();
        Instant at = Instant.ofEpochSecond((Long) ts.getField(tsd.findFieldByName("seconds")),
            (Integer) ts.getField(tsd.findFieldByName("nanos")));
        Row row = toRow(m);
        Row withTime = Row.withPositions(row.getArity() + 1);
        for (int i = 0; i < row.getArity(); i++) withTime.setField(i, row.getField(i));
        withTime.setField(row.getArity(), LocalDateTime.ofInstant(at, ZoneOffset.UTC));
        rows.add(withTime);
      }
    }
    return rows;
  }

  private static TypeInformation<Row> rowType(Descriptor d, boolean withRowtime) {
    List<FieldDescriptor> fs = d.getFields();
    int n = fs.size() + (withRowtime ? 1 : 0);
    String[] names = new String[n];
    TypeInformation<?>[] types = new TypeInformation<?>[n];
    for (int i = 0; i < fs.size(); i++) {
      names[i] = fs.get(i).getName();
      types[i] = fieldType(fs.get(i));
    }
    if (withRowtime) {
      names[n - 1] = "rowtime";
      types[n - 1] = Types.LOCAL_DATE_TIME;
    }
    return Types.ROW_NAMED(names, types);
  }

  /** The same layout in the table API's types, for the declared schema. */
  private static DataType rowDataType(Descriptor d, boolean withRowtime) {
    List<DataTypes.Field> fields = new ArrayList<>();
    for (FieldDescriptor f : d.getFields()) fields.add(DataTypes.FIELD(f.getName(), fieldDataType(f)));
    if (withRowtime) fields.add(DataTypes.FIELD("rowtime", DataTypes.TIMESTAMP(3)));
    return DataTypes.ROW(fields);
  }

  private static DataType fieldDataType(FieldDescriptor f) {
    if (f.isMapField()) {
      Descriptor entry = f.getMessageType();
      return DataTypes.ARRAY(DataTypes.ROW(
          DataTypes.FIELD("key", valueDataType(entry.findFieldByName("key"))),
          DataTypes.FIELD("value", valueDataType(entry.findFieldByName("value")))));
    }
    DataType t = valueDataType(f);
    return f.isRepeated() ? DataTypes.ARRAY(t) : t;
  }

  private static DataType valueDataType(FieldDescriptor f) {
    switch (f.getJavaType()) {
      case INT: return DataTypes.INT();
      case LONG: return DataTypes.BIGINT();
      case FLOAT: return DataTypes.FLOAT();
      case DOUBLE: return DataTypes.DOUBLE();
      case BOOLEAN: return DataTypes.BOOLEAN();
      case STRING: case ENUM: return DataTypes.STRING();
      case BYTE_STRING: return DataTypes.BYTES();
      default: return rowDataType(f.getMessageType(), false);
    }
  }

  private static TypeInformation<?> fieldType(FieldDescriptor f) {
    if (f.isMapField()) {
      Descriptor entry = f.getMessageType();
      return Types.OBJECT_ARRAY(Types.ROW_NAMED(new String[] {"key", "value"},
          valueType(entry.findFieldByName("key")), valueType(entry.findFieldByName("value"))));
    }
    TypeInformation<?> t = valueType(f);
    return f.isRepeated() ? Types.OBJECT_ARRAY(t) : t;
  }

  private static TypeInformation<?> valueType(FieldDescriptor f) {
    switch (f.getJavaType()) {
      case INT: return Types.INT;
      case LONG: return Types.LONG;
      case FLOAT: return Types.FLOAT;
      case DOUBLE: return Types.DOUBLE;
      case BOOLEAN: return Types.BOOLEAN;
      case STRING: case ENUM: return Types.STRING;
      case BYTE_STRING: return Types.PRIMITIVE_ARRAY(Types.BYTE);
      default: return rowType(f.getMessageType(), false);
    }
  }

  private static Row toRow(Message m) {
    List<FieldDescriptor> fs = m.getDescriptorForType().getFields();
    Row row = Row.withPositions(fs.size());
    for (int i = 0; i < fs.size(); i++) row.setField(i, field(m, fs.get(i)));
    return row;
  }

  private static Object field(Message m, FieldDescriptor f) {
    if (f.isRepeated()) {
      int n = m.getRepeatedFieldCount(f);
      FieldDescriptor k = f.isMapField() ? f.getMessageType().findFieldByName("key") : null;
      FieldDescriptor v = f.isMapField() ? f.getMessageType().findFieldByName("value") : null;
      Object[] out = f.isMapField() ? new Row[n] : newArray(f, n);
      for (int i = 0; i < n; i++) {
        Object e = m.getRepeatedField(f, i);
        out[i] = f.isMapField()
            ? Row.of(value(k, ((Message) e).getField(k)), value(v, ((Message) e).getField(v)))
            : value(f, e);
      }
      return out;
    }
    return value(f, m.getField(f));   // absent: the default (a message's default instance)
  }

  /** Arrays of the element's own class: Flink's ObjectArrayTypeInfo serializers expect them. */
  private static Object[] newArray(FieldDescriptor f, int n) {
    switch (f.getJavaType()) {
      case INT: return new Integer[n];
      case LONG: return new Long[n];
      case FLOAT: return new Float[n];
      case DOUBLE: return new Double[n];
      case BOOLEAN: return new Boolean[n];
      case STRING: case ENUM: return new String[n];
      case BYTE_STRING: return new byte[n][];
      default: return new Row[n];
    }
  }

  private static Object value(FieldDescriptor f, Object v) {
    switch (f.getJavaType()) {
      case ENUM: return ((EnumValueDescriptor) v).getName();
      case BYTE_STRING: return ((ByteString) v).toByteArray();
      case MESSAGE: return toRow((Message) v);
      default: return v;
    }
  }

  private static Map<String, Descriptor> loadDescriptors(byte[] bytes) throws IOException {
    FileDescriptorSet set = FileDescriptorSet.parseFrom(bytes);
    Map<String, FileDescriptorProto> protos = new HashMap<>();
    for (FileDescriptorProto p : set.getFileList()) protos.put(p.getName(), p);
    Map<String, FileDescriptor> built = new HashMap<>();
    Map<String, Descriptor> out = new HashMap<>();
    for (FileDescriptorProto p : set.getFileList()) {
      for (Descriptor d : build(p.getName(), protos, built).getMessageTypes()) index(d, out);
    }
    return out;
  }

  private static void index(Descriptor d, Map<String, Descriptor> out) {
    out.put(d.getFullName(), d);
    for (Descriptor nested : d.getNestedTypes()) index(nested, out);
  }

  private static FileDescriptor build(String name, Map<String, FileDescriptorProto> protos,
                                      Map<String, FileDescriptor> built) {
    FileDescriptor done = built.get(name);
    if (done != null) return done;
    FileDescriptorProto p = protos.get(name);
    if (p == null) throw new IllegalArgumentException("lacks the imported file " + name + " (--include_imports)");
    FileDescriptor[] deps = new FileDescriptor[p.getDependencyCount()];
    for (int i = 0; i < deps.length; i++) deps[i] = build(p.getDependency(i), protos, built);
    try {
      FileDescriptor fd = FileDescriptor.buildFrom(p, deps);
      built.put(name, fd);
      return fd;
    } catch (com.google.protobuf.Descriptors.DescriptorValidationException e) {
      throw new IllegalArgumentException("invalid descriptor " + name + ": " + e.getMessage(), e);
    }
  }

  // ---------------------------------------------------------------------------------- output

  /** A result value as JSON, as `dagger preview` prints it (output.py). */
  private static JsonNode toJson(Object v) {
    if (v == null) return NODES.nullNode();
    if (v instanceof LocalDateTime) return NODES.textNode(iso(((LocalDateTime) v).toInstant(ZoneOffset.UTC)));
    if (v instanceof Instant) return NODES.textNode(iso((Instant) v));
    if (v instanceof LocalDate || v instanceof LocalTime) return NODES.textNode(v.toString());
    if (v instanceof BigDecimal) {
      BigDecimal d = ((BigDecimal) v).stripTrailingZeros();
      return d.scale() <= 0 ? NODES.numberNode(d.toBigIntegerExact()) : NODES.numberNode(d.doubleValue());
    }
    if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      if (Double.isNaN(d)) return NODES.nullNode();
      if (Double.isInfinite(d)) return NODES.textNode(d > 0 ? "Infinity" : "-Infinity");
      return NODES.numberNode(d);   // a FLOAT as its exact double value, as Spark gives it
    }
    if (v instanceof Number || v instanceof Boolean) return JSON.valueToTree(v);
    if (v instanceof byte[]) return NODES.textNode(Base64.getEncoder().encodeToString((byte[]) v));
    if (v instanceof Row) {
      Row r = (Row) v;
      ObjectNode o = NODES.objectNode();
      java.util.Set<String> names = r.getFieldNames(true);
      if (names != null) for (String n : names) o.set(n, toJson(r.getField(n)));
      else for (int i = 0; i < r.getArity(); i++) o.set("f" + i, toJson(r.getField(i)));
      return o;
    }
    if (v instanceof Object[]) {
      ArrayNode a = NODES.arrayNode();
      for (Object e : (Object[]) v) a.add(toJson(e));
      return a;
    }
    if (v.getClass().isArray()) {   // primitive arrays
      ArrayNode a = NODES.arrayNode();
      for (int i = 0; i < java.lang.reflect.Array.getLength(v); i++) a.add(toJson(java.lang.reflect.Array.get(v, i)));
      return a;
    }
    if (v instanceof Map) {
      ObjectNode o = NODES.objectNode();
      for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) o.set(String.valueOf(e.getKey()), toJson(e.getValue()));
      return o;
    }
    return NODES.textNode(v.toString());
  }

  /** 2026-11-22T00:01:00Z; a fraction only when it is not zero. */
  private static String iso(Instant t) {
    LocalDateTime l = LocalDateTime.ofInstant(t, ZoneOffset.UTC);
    String head = l.withNano(0).toLocalDate() + "T" + String.format("%02d:%02d:%02d", l.getHour(), l.getMinute(), l.getSecond());
    if (l.getNano() == 0) return head + "Z";
    String frac = String.format("%09d", l.getNano()).replaceAll("0+$", "");
    return head + "." + frac + "Z";
  }
}
