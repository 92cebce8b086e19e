// Which topics an mm2.properties replicates, decided by Kafka's own MirrorMaker 2 classes: the
// independent check of infra/components/kafka_mirror.py's output (tests/test_infra_mm2_filter.py).
//
//   java -cp '.jvm/kafka/*' jvm/mm2-filter/Mm2TopicFilter.java MM2_PROPERTIES... < candidate names
//
// Loads each file with java.util.Properties, builds MirrorMakerConfig, and for each enabled flow
// into `local` takes the source connector's configuration exactly as MirrorMaker 2 hands it over
// (connectorBaseConfig) to a DefaultTopicFilter. Prints `FILE <path>` a file, `FLOW source->local`
// a flow, then each candidate name (one a line on stdin) that the flow would replicate. Refuses (exit 2)
// a topic.filter.class other than DefaultTopicFilter, since then this check would prove nothing.
import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.connect.mirror.DefaultTopicFilter;
import org.apache.kafka.connect.mirror.MirrorMakerConfig;
import org.apache.kafka.connect.mirror.MirrorSourceConnector;
import org.apache.kafka.connect.mirror.SourceAndTarget;

public class Mm2TopicFilter {
    public static void main(String[] args) throws Exception {
        List<String> names = new ArrayList<>();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = stdin.readLine()) != null; ) if (!line.isEmpty()) names.add(line);
        for (String path : args) {
            System.out.println("FILE " + path);
            replicated(path, names);
        }
    }

    static void replicated(String path, List<String> names) throws Exception {
        Properties file = new Properties();
        try (FileInputStream in = new FileInputStream(path)) {
            file.load(in);
        }
        Map<String, String> props = new HashMap<>();
        for (String key : file.stringPropertyNames()) props.put(key, file.getProperty(key));
        // the SASL login comes from a secret file that only exists on the mirror's host: without
        // the provider the placeholder stays text; nothing of the topic filter depends on it
        props.remove("config.providers");
        MirrorMakerConfig config = new MirrorMakerConfig(props);
        for (SourceAndTarget flow : config.clusterPairs()) {
            if (!flow.target().equals("local")) continue;
            Map<String, String> connector = config.connectorBaseConfig(flow, MirrorSourceConnector.class);
            if (!Boolean.parseBoolean(connector.getOrDefault("enabled", "false"))) continue;
            String filterClass = connector.getOrDefault("topic.filter.class", DefaultTopicFilter.class.getName());
            if (!filterClass.equals(DefaultTopicFilter.class.getName())) {
                System.err.println(path + ": topic.filter.class is " + filterClass + ", not DefaultTopicFilter");
                System.exit(2);
            }
            DefaultTopicFilter filter = new DefaultTopicFilter();
            filter.configure(connector);
            System.out.println("FLOW " + flow);
            for (String name : names) if (filter.shouldReplicateTopic(name)) System.out.println(name);
        }
    }
}
