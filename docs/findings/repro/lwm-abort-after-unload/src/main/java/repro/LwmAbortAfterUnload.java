package repro;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.apache.pulsar.client.api.transaction.TxnID;

/**
 * Committed transactions lost after a namespace unload.
 *
 * <p>Writes numbered messages in transactions to a partitioned topic (number n goes to partition
 * n mod P) while the namespace is unloaded through the admin REST API every few seconds, then
 * reads the topic back with a fresh consumer and lists every transaction whose commit() completed
 * normally but whose numbers are not all readable and which a partition says it aborted
 * (transactionInBufferStats). Expected: none.
 *
 * <p>Arguments: [adminUrl] [serviceUrl] (default http://127.0.0.1:8080 pulsar://127.0.0.1:6650).
 * Tuning (system properties): repro.partitions (4), repro.txnSize (25), repro.concurrency (8),
 * repro.seconds (40), repro.unloadEveryMs (5000), repro.namespace (public/default). The 40 s and
 * the unloads start with the first commit.
 * Exit code: 0 nothing lost, 1 committed transactions aborted by a partition (lost), 2 the run
 * itself failed, 3 nothing lost but the read of some committed transactions was held.
 */
public final class LwmAbortAfterUnload {

    record Committed(TxnID txn, long first, Instant at) {}

    private static final int PARTITIONS = Integer.getInteger("repro.partitions", 4);
    private static final int TXN_SIZE = Integer.getInteger("repro.txnSize", 25);
    private static final int CONCURRENCY = Integer.getInteger("repro.concurrency", 8);
    private static final int SECONDS = Integer.getInteger("repro.seconds", 40);
    private static final int UNLOAD_EVERY_MS = Integer.getInteger("repro.unloadEveryMs", 5000);
    private static final String NAMESPACE = System.getProperty("repro.namespace", "public/default");

    private static final HttpClient HTTP = HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10)).build();

    public static void main(String[] args) throws Exception {
        String admin = args.length > 0 ? args[0].replaceAll("/+$", "") : "http://127.0.0.1:8080";
        String service = args.length > 1 ? args[1] : "pulsar://127.0.0.1:6650";
        int code;
        try {
            code = run(admin, service);
        } catch (Exception e) {
            System.out.println("the reproduction could not run: " + e);
            e.printStackTrace();
            code = 2;
        }
        System.exit(code);
    }

    private static int run(String admin, String service) throws Exception {
        String name = "lwm-repro-" + UUID.randomUUID().toString().substring(0, 8);
        String topic = "persistent://" + NAMESPACE + "/" + name;
        say("pulsar-client " + PulsarClient.class.getPackage().getImplementationVersion()
                + ", admin " + admin + ", service " + service);
        say("topic " + topic + ": " + PARTITIONS + " partitions; transactions of " + TXN_SIZE
                + " numbers, " + CONCURRENCY + " at a time, for " + SECONDS + " s; namespace "
                + NAMESPACE + " unloaded every " + UNLOAD_EVERY_MS + " ms");
        int created = http("PUT", admin + "/admin/v2/persistent/" + NAMESPACE + "/" + name + "/partitions",
                String.valueOf(PARTITIONS)).statusCode();
        if (created / 100 != 2) {
            throw new IllegalStateException("creating the partitioned topic answered HTTP " + created);
        }

        ConcurrentLinkedQueue<Committed> committed = new ConcurrentLinkedQueue<>();
        AtomicLong next = new AtomicLong();
        AtomicLong abortedAfterFailedSend = new AtomicLong();
        AtomicLong commitFailed = new AtomicLong();
        try (PulsarClient client = PulsarClient.builder().serviceUrl(service).enableTransaction(true)
                .operationTimeout(30, TimeUnit.SECONDS).build()) {
            List<Producer<Long>> producers = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                producers.add(client.newProducer(Schema.INT64).topic(topic + "-partition-" + p)
                        .sendTimeout(0, TimeUnit.SECONDS).blockIfQueueFull(true).create());
            }
            // The window starts with the first commit (a cold standalone may take a while first).
            AtomicLong deadline = new AtomicLong(Long.MAX_VALUE);
            CompletableFuture<Void> firstCommit = new CompletableFuture<>();
            firstCommit.thenRun(() -> deadline.set(System.nanoTime() + TimeUnit.SECONDS.toNanos(SECONDS)));
            AtomicBoolean producing = new AtomicBoolean(true);

            Thread unloader = new Thread(() -> {
                firstCommit.join();
                unloadLoop(admin, producing, committed);
            }, "unloader");
            unloader.start();
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < CONCURRENCY; w++) {
                Thread t = new Thread(() -> {
                    while (System.nanoTime() < deadline.get()) {
                        long first = next.getAndAdd(TXN_SIZE);
                        Transaction txn;
                        try {
                            txn = client.newTransaction().withTransactionTimeout(2, TimeUnit.MINUTES)
                                    .build().get(60, TimeUnit.SECONDS);
                        } catch (Exception e) {
                            say("new transaction failed: " + e);
                            continue;
                        }
                        try {
                            List<CompletableFuture<?>> sends = new ArrayList<>();
                            for (long n = first; n < first + TXN_SIZE; n++) {
                                sends.add(producers.get((int) (n % PARTITIONS)).newMessage(txn).value(n)
                                        .sendAsync());
                            }
                            CompletableFuture.allOf(sends.toArray(new CompletableFuture[0]))
                                    .get(60, TimeUnit.SECONDS);
                        } catch (Exception e) {
                            abortedAfterFailedSend.incrementAndGet();
                            txn.abort();
                            continue;
                        }
                        try {
                            txn.commit().get(60, TimeUnit.SECONDS);
                            committed.add(new Committed(txn.getTxnID(), first, Instant.now()));
                            firstCommit.complete(null);
                        } catch (Exception e) {
                            // The outcome is unknown to the client: these numbers are not expected.
                            commitFailed.incrementAndGet();
                            say("commit of " + txn.getTxnID() + " failed: " + e);
                        }
                    }
                }, "producer-" + w);
                t.start();
                workers.add(t);
            }
            try {
                firstCommit.get(120, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                say("no transaction committed within 120 s; producing for " + SECONDS + " s from now");
                firstCommit.complete(null);
            }
            for (Thread t : workers) {
                t.join();
            }
            producing.set(false);
            firstCommit.complete(null);
            unloader.join();
            for (Producer<Long> p : producers) {
                p.close();
            }
            say("produced: " + committed.size() + " transactions committed (commit() returned normally), "
                    + abortedAfterFailedSend.get() + " aborted after a failed send, " + commitFailed.get()
                    + " with a failed commit (outcome unknown, not checked)");

            // Read back everything with a fresh consumer.
            long expected = (long) committed.size() * TXN_SIZE;
            Map<Long, Integer> seen = new ConcurrentHashMap<>();
            try (Consumer<Long> consumer = client.newConsumer(Schema.INT64).topic(topic)
                    .subscriptionName("check-" + UUID.randomUUID())
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
                long committedSeen = 0;
                java.util.Set<Long> committedNumbers = new java.util.HashSet<>();
                for (Committed c : committed) {
                    for (long n = c.first(); n < c.first() + TXN_SIZE; n++) {
                        committedNumbers.add(n);
                    }
                }
                while (committedSeen < expected) {
                    Message<Long> m = consumer.receive(20, TimeUnit.SECONDS);
                    if (m == null) {
                        break;
                    }
                    if (seen.merge(m.getValue(), 1, Integer::sum) == 1 && committedNumbers.contains(m.getValue())) {
                        committedSeen++;
                    }
                    consumer.acknowledge(m);
                }
            }
            return judge(admin, topic, committed, seen, expected);
        }
    }

    private static int judge(String admin, String topic, ConcurrentLinkedQueue<Committed> committed,
                             Map<Long, Integer> seen, long expected) throws Exception {
        List<Committed> sorted = new ArrayList<>(committed);
        sorted.sort((a, b) -> Long.compare(a.first(), b.first()));
        long lostNumbers = 0;
        int lost = 0;
        List<TxnID> held = new ArrayList<>();
        System.out.println();
        System.out.println("EXPECTED: all " + expected + " numbers of the " + committed.size()
                + " committed transactions readable; no committed transaction missing or aborted.");
        for (Committed c : sorted) {
            Map<Integer, List<Long>> missing = new TreeMap<>();
            for (long n = c.first(); n < c.first() + TXN_SIZE; n++) {
                if (!seen.containsKey(n)) {
                    missing.computeIfAbsent((int) (n % PARTITIONS), k -> new ArrayList<>()).add(n);
                }
            }
            if (missing.isEmpty()) {
                continue;
            }
            // Ask each partition missing numbers of the transaction what became of it.
            List<String> report = new ArrayList<>();
            boolean aborted = false;
            for (Map.Entry<Integer, List<Long>> e : missing.entrySet()) {
                String tail = (topic + "-partition-" + e.getKey()).substring("persistent://".length());
                String stats = http("GET", admin + "/admin/v3/transactions/transactionInBufferStats/" + tail + "/"
                        + c.txn().getMostSigBits() + "/" + c.txn().getLeastSigBits(), null).body();
                boolean a = stats.replace(" ", "").contains("\"aborted\":true");
                aborted |= a;
                if (a) {
                    lostNumbers += e.getValue().size();
                }
                report.add("  partition " + e.getKey() + ": " + e.getValue().size() + " of its numbers "
                        + e.getValue() + " not delivered; GET .../transactionInBufferStats/" + tail + "/"
                        + c.txn().getMostSigBits() + "/" + c.txn().getLeastSigBits() + " answers " + stats);
            }
            if (!aborted) {
                held.add(c.txn());
                continue;
            }
            lost++;
            System.out.println("LOST: transaction " + c.txn() + " (numbers " + c.first() + ".."
                    + (c.first() + TXN_SIZE - 1) + "), commit() completed normally at " + c.at() + ":");
            report.forEach(System.out::println);
        }
        long duplicates = seen.values().stream().filter(v -> v > 1).count();
        if (!held.isEmpty()) {
            System.out.println("NOT READ: " + held.size() + " committed transaction(s) (" + held.get(0) + " .. "
                    + held.get(held.size() - 1) + ") not (all) delivered although no partition says it aborted"
                    + " them (read back until 20 s passed without a message); not counted as lost here. The"
                    + " partitions' transaction buffers:");
            for (int p = 0; p < PARTITIONS; p++) {
                String tail = (topic + "-partition-" + p).substring("persistent://".length());
                System.out.println("  partition " + p + ": "
                        + http("GET", admin + "/admin/v3/transactions/transactionBufferStats/" + tail, null).body());
            }
        }
        if (lost > 0) {
            System.out.println("SAW: " + lost + " committed transaction(s) aborted by a partition, " + lostNumbers
                    + " number(s) lost (" + held.size() + " more not read, " + duplicates
                    + " numbers read more than once). The broker log has \"Successes to abort low water mark for"
                    + " txn [(0,N)]\" for each.");
            return 1;
        }
        System.out.println("SAW: no committed transaction aborted (" + held.size() + " not read, " + duplicates
                + " numbers read more than once).");
        return held.isEmpty() ? 0 : 3;
    }

    private static void unloadLoop(String admin, AtomicBoolean producing, ConcurrentLinkedQueue<Committed> committed) {
        long period = UNLOAD_EVERY_MS;
        long at = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.min(3000, period));
        say("first commit done; unloading every " + period + " ms");
        int k = 0;
        while (producing.get()) {
            long wait = at - System.nanoTime();
            if (wait > 0) {
                try {
                    TimeUnit.NANOSECONDS.sleep(Math.min(wait, TimeUnit.MILLISECONDS.toNanos(100)));
                } catch (InterruptedException e) {
                    return;
                }
                continue;
            }
            at += TimeUnit.MILLISECONDS.toNanos(period);
            k++;
            Instant started = Instant.now();
            try {
                int status = http("PUT", admin + "/admin/v2/namespaces/" + NAMESPACE + "/unload", "").statusCode();
                say("unload #" + k + " of " + NAMESPACE + " at " + started + ": HTTP " + status + " after "
                        + Duration.between(started, Instant.now()).toMillis() + " ms (" + committed.size()
                        + " transactions committed so far)");
            } catch (Exception e) {
                say("unload #" + k + " failed: " + e);
            }
        }
    }

    private static HttpResponse<String> http(String method, String url, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(60));
        if (body == null) {
            b.GET();
        } else {
            b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body));
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void say(String line) {
        System.out.println(Instant.now() + " " + line);
    }
}
