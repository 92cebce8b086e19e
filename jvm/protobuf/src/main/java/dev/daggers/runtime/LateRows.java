package dev.daggers.runtime;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.api.java.UDF1;

/**
 * Says which decoded messages the job's window aggregation will drop as late, so they go to the
 * dead-letter topic (reason {@code late: ...}) instead of vanishing.
 *
 * <p>Spark 4.0 drops a row at a window aggregation when its window's end is at or before the
 * watermark for late events, which for micro-batch N is the watermark batch N-1 ran with (Spark's
 * PropagateWatermarkSimulator: "we use watermark for previous microbatch to determine late
 * events"; WatermarkSupport: {@code window.end <= watermark}). That watermark is in the query's
 * checkpoint, {@code offsets/<N-1>} (line 2: {@code {"batchWatermarkMs":...}}), and N is the task's
 * local property {@code streaming.sql.batchId}: so the same message is judged the same way when a
 * batch is run again. A message is late when the latest window it falls in has ended: with HOP
 * windows, one also in an open window still counts there and is not sent aside.
 *
 * <p>Called as {@code name(eventTimeMs) -> reason or null}; null also when the watermark cannot be
 * read (said once per executor): Spark then drops the message and counts it as before.
 */
public final class LateRows implements UDF1<Long, String> {
  private static final long serialVersionUID = 1L;

  /** The reason's prefix: DeadLetters counts these as the kind "late". */
  public static final String LATE = "late:";
  static final String BATCH_ID = "streaming.sql.batchId";
  private static final Pattern WATERMARK = Pattern.compile("\"batchWatermarkMs\"\\s*:\\s*(-?\\d+)");
  // per executor JVM: offsets file -> watermark (a few batches' worth; each task of a batch reads one)
  private static final Map<String, Long> WATERMARKS = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
      return size() > 64;
    }
  };
  private static volatile boolean warned;

  private final String offsets;
  private final long sizeMs;
  private final long slideMs;

  public LateRows(String checkpoint, long sizeMs, long slideMs) {
    if (sizeMs <= 0 || slideMs <= 0) throw new IllegalArgumentException("a window has a positive size and slide");
    this.offsets = checkpoint.replaceAll("/+$", "") + "/offsets";
    this.sizeMs = sizeMs;
    this.slideMs = slideMs;
  }

  @Override
  public String call(Long eventMs) {
    if (eventMs == null) return null;
    long watermark = watermarkForLateEvents();
    if (watermark <= 0) return null;
    long end = eventMs - Math.floorMod(eventMs, slideMs) + sizeMs;   // the latest window's (Spark's alignment)
    if (end > watermark) return null;
    return LATE + " event time " + Instant.ofEpochMilli(eventMs) + " falls in the window ending "
        + Instant.ofEpochMilli(end) + ", closed by the watermark " + Instant.ofEpochMilli(watermark);
  }

  /** A task and its watermark: the last one asked of this instance, so a row costs a thread-local read. */
  private static final class Known {
    final TaskContext task;
    final long watermark;

    Known(TaskContext task, long watermark) {
      this.task = task;
      this.watermark = watermark;
    }
  }

  // the watermark is the same for every row of a task: looked up once a task, not once a row (the
  // lookup's property read, string and map profiled at 3% of the seed query). Tasks sharing this
  // instance each check that the pair is their own; a lost race only looks it up again.
  private transient volatile Known known;

  /** The watermark Spark drops late rows by in this task's batch (0: none yet, or unknown). */
  long watermarkForLateEvents() {
    TaskContext task = TaskContext.get();
    Known last = known;
    if (last != null && task != null && last.task == task) return last.watermark;
    long watermark = lookUp(task);
    if (task != null) known = new Known(task, watermark);
    return watermark;
  }

  private long lookUp(TaskContext task) {
    String id = task == null ? null : task.getLocalProperty(BATCH_ID);
    if (id == null) return 0;
    long previous = Long.parseLong(id) - 1;
    if (previous < 0) return 0;
    String file = offsets + "/" + previous;
    synchronized (WATERMARKS) {
      Long known = WATERMARKS.get(file);
      if (known != null) return known;
    }
    long read = read(file);
    synchronized (WATERMARKS) {
      WATERMARKS.put(file, read);
    }
    return read;
  }

  static long read(String file) {
    Path path = new Path(file);
    try {
      FileSystem fs = path.getFileSystem(new Configuration());
      try (FSDataInputStream in = fs.open(path);
           BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
        reader.readLine();                        // v1
        String metadata = reader.readLine();
        Matcher m = WATERMARK.matcher(metadata == null ? "" : metadata);
        if (m.find()) return Long.parseLong(m.group(1));
      }
    } catch (Exception e) {
      if (!warned) {
        warned = true;
        System.err.println("dagger: late messages are not set aside (the watermark in " + file
            + " cannot be read: " + e + "); Spark drops and counts them");
      }
    }
    return 0;
  }
}
