// Topic patterns as MirrorMaker 2 and Kafka read them: java.util.regex, not Python's re.
//
// Run as a single-file program (`java TopicPatterns.java`, no build step); infra/topics.py keeps
// one running for a whole validate run. Requests come one a line, fields hex-encoded UTF-8 so
// that any character survives the pipe; a line END closes a batch, answered one line a request:
//   C <pattern>            compile      -> OK | ERR <index> <description>
//   M <pattern> <subject>  could match? -> FULL (the subject matches) | PREFIX (a longer name starting
//                                          with the subject could match) | NO | ERR ... | SLOW
// Descriptions are hex-encoded too. SLOW: the match ran past a step budget (catastrophic
// backtracking), which MirrorMaker would pay on every topic name too.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

public class TopicPatterns {
    static final long BUDGET = 2_000_000;   // charAt calls per match

    static final class TooSlow extends RuntimeException {
        TooSlow() { super(null, null, false, false); }
    }

    /** A subject that counts the matcher's reads and stops a runaway match. */
    static final class Budgeted implements CharSequence {
        final String s; final long[] left;
        Budgeted(String s, long[] left) { this.s = s; this.left = left; }
        public char charAt(int i) { if (--left[0] < 0) throw new TooSlow(); return s.charAt(i); }
        public int length() { return s.length(); }
        public CharSequence subSequence(int a, int b) { return new Budgeted(s.substring(a, b), left); }
        public String toString() { return s; }
    }

    static final HexFormat HEX = HexFormat.of();

    static String text(String hex) { return new String(HEX.parseHex(hex), StandardCharsets.UTF_8); }

    static String hex(String s) { return HEX.formatHex((s == null ? "" : s).getBytes(StandardCharsets.UTF_8)); }

    static String answer(String line) {
        String[] f = line.split(" ", -1);
        Pattern p;
        try {
            p = Pattern.compile(text(f[1]));
        } catch (PatternSyntaxException e) {
            return "ERR " + e.getIndex() + " " + hex(e.getDescription());
        } catch (RuntimeException e) {   // bad hex: a bug on the Python side, said as such
            return "ERR -1 " + hex("bad request: " + e);
        }
        if (f[0].equals("C")) return "OK";
        try {
            Matcher m = p.matcher(new Budgeted(text(f[2]), new long[] {BUDGET}));
            if (m.matches()) return "FULL";
            return m.hitEnd() ? "PREFIX" : "NO";
        } catch (TooSlow e) {
            return "SLOW";
        } catch (StackOverflowError e) {
            return "SLOW";
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        List<String> batch = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (!line.equals("END")) { batch.add(line); continue; }
            for (String request : batch) out.println(answer(request));
            out.println("END");
            out.flush();
            batch.clear();
        }
    }
}
