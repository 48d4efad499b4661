package dev.pulsarchaos.driver;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pulsar.PulsarVersion;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.ProducerBuilder;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.apache.pulsar.client.api.transaction.TxnID;
import org.apache.pulsar.client.impl.transaction.TransactionImpl;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pulsar-chaos driver for the official Java client: protocol version 1 of docs/drivers.md.
 *
 * <p>Requests are JSON lines on stdin, replies JSON lines on stdout (nothing else goes there:
 * System.out is pointed at stderr), the log goes to stderr. Every request is started on the
 * reader thread through the client's async API and answered from the client's callbacks, so a
 * slow request never holds up the others; each reply line is written whole under a lock.
 */
public final class Driver {
    private static final Logger log = LoggerFactory.getLogger(Driver.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int PROTOCOL = 1;
    private static final String LIBRARY = "org.apache.pulsar:pulsar-client";

    private final OutputStream out;
    private final Object writeLock = new Object();
    /** Blocking work only (building the client, closing it): never the reader thread. */
    private final ExecutorService blocking = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "driver-blocking");
        t.setDaemon(true);
        return t;
    });
    private final AtomicBoolean connectAsked = new AtomicBoolean();
    private volatile Connection conn;
    /** The transactions this driver opened, by "most:least"; forgotten after a successful end. */
    private final Map<String, Transaction> txns = new ConcurrentHashMap<>();
    /** The consumers this driver subscribed, by the handle `subscribe` answered. */
    private final Map<Long, Input> consumers = new ConcurrentHashMap<>();
    private final AtomicLong nextConsumer = new AtomicLong(1);

    /** A consumer and the messages it received that are neither acknowledged nor handed back. */
    private static final class Input {
        final Consumer<byte[]> consumer;
        final Map<String, MessageId> held = new ConcurrentHashMap<>();

        Input(Consumer<byte[]> consumer) {
            this.consumer = consumer;
        }
    }

    private static final class Connection {
        final PulsarClient client;
        final List<Producer<byte[]>> producers;
        final int messageSize;
        final boolean transactions;

        Connection(PulsarClient client, List<Producer<byte[]>> producers, int messageSize,
                   boolean transactions) {
            this.client = client;
            this.producers = producers;
            this.messageSize = messageSize;
            this.transactions = transactions;
        }
    }

    /** A request the driver refuses on its own (not the client's answer). */
    private static final class Refusal extends Exception {
        final String cls;

        Refusal(String cls, String message) {
            super(message, null, false, false);
            this.cls = cls;
        }
    }

    private Driver(OutputStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        // Protocol lines only on the real stdout; anything printing to System.out lands in the log.
        OutputStream stdout = new FileOutputStream(FileDescriptor.out);
        System.setOut(System.err);
        Driver d = new Driver(stdout);
        d.run();
    }

    private void run() {
        log.info("pulsar-chaos Java driver, {} {}, protocol {}", LIBRARY, PulsarVersion.getVersion(), PROTOCOL);
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                handle(line);
            }
            log.info("stdin closed: exiting");
        } catch (Throwable t) {
            log.error("reading stdin failed: exiting", t);
        }
        shutdown();
    }

    /** Best-effort close of the client (bounded), then exit 0. */
    private void shutdown() {
        Connection c = conn;
        if (c != null) {
            try {
                c.client.closeAsync().get(1, TimeUnit.SECONDS);
            } catch (Throwable t) {
                log.warn("closing the client: {}", t.toString());
            }
        }
        System.err.flush();
        Runtime.getRuntime().halt(0);
    }

    private void handle(String line) {
        long id = 0;
        JsonNode req;
        try {
            req = JSON.readTree(line);
            if (req == null || !req.isObject()) {
                throw new IllegalArgumentException("not a JSON object");
            }
            JsonNode idNode = req.get("id");
            if (idNode != null && idNode.canConvertToLong()) {
                id = idNode.asLong();
            }
            if (id <= 0) {
                throw new IllegalArgumentException("missing or non-positive id");
            }
        } catch (Exception e) {
            replyError(id, "BadRequest", "cannot parse request: " + e.getMessage(), List.of());
            return;
        }
        String op = req.path("op").asText("");
        try {
            switch (op) {
                case "hello" -> hello(id);
                case "connect" -> connect(id, req);
                case "new_txn" -> newTxn(id, req);
                case "register" -> register(id, req);
                case "send" -> send(id, req);
                case "commit" -> end(id, req, true);
                case "abort" -> end(id, req, false);
                case "subscribe" -> subscribe(id, req);
                case "receive" -> receive(id, req);
                case "ack" -> ack(id, req);
                case "nack" -> nack(id, req);
                case "close_consumer" -> closeConsumer(id, req);
                case "close" -> close(id);
                default -> replyError(id, "BadRequest", "unknown op '" + op + "'", List.of());
            }
        } catch (Refusal r) {
            replyError(id, r.cls, r.getMessage(), List.of());
        } catch (Throwable t) {
            // The client threw instead of failing a future: still its answer.
            replyFailure(id, t);
        }
    }

    // ---- operations ----

    private void hello(long id) {
        ObjectNode r = ok(id);
        r.put("client", "java");
        r.put("library", LIBRARY);
        r.put("version", PulsarVersion.getVersion());
        r.put("protocol", PROTOCOL);
        // The optional `register` request is served, with its `subscriptions` (docs/drivers.md).
        r.put("register", true);
        r.put("register_acks", true);
        // `ack` with `each` answers every id on its own (docs/drivers.md).
        r.put("ack_each", true);
        write(r);
    }

    private void connect(long id, JsonNode req) throws Refusal {
        String serviceUrl = text(req, "service_url");
        String topic = text(req, "topic");
        int partitions = req.path("partitions").asInt(0);
        long opTimeoutMs = req.path("op_timeout_ms").asLong(30_000);
        int batchSize = req.path("batch_size").asInt(1);
        int messageSize = req.path("message_size").asInt(0);
        boolean transactions = req.path("transactions").asBoolean(false);
        String producerName = text(req, "producer_name");
        if (partitions <= 0) {
            throw new Refusal("BadRequest", "partitions must be positive");
        }
        if (!connectAsked.compareAndSet(false, true)) {
            throw new Refusal("BadRequest", "only one connect per process");
        }
        // build() is blocking (with transactions it starts the coordinator client and waits).
        blocking.execute(() -> {
            PulsarClient client = null;
            try {
                long t0 = System.nanoTime();
                client = PulsarClient.builder()
                        .serviceUrl(serviceUrl)
                        .operationTimeout((int) Math.min(Integer.MAX_VALUE, opTimeoutMs), TimeUnit.MILLISECONDS)
                        .enableTransaction(transactions)
                        .build();
                List<CompletableFuture<Producer<byte[]>>> futures = new ArrayList<>();
                for (int i = 0; i < partitions; i++) {
                    ProducerBuilder<byte[]> b = client.newProducer(Schema.BYTES)
                            // One partition: the harness made a topic without partitions.
                            .topic(partitions == 1 ? topic : topic + "-partition-" + i)
                            .producerName(producerName + "-p" + i)
                            .enableBatching(batchSize > 1);
                    if (batchSize > 1) {
                        b = b.batchingMaxMessages(batchSize);
                    }
                    if (transactions) {
                        b = b.sendTimeout(0, TimeUnit.MILLISECONDS);
                    }
                    futures.add(b.createAsync());
                }
                CompletableFuture.allOf(futures.toArray(new CompletableFuture[0])).get();
                List<Producer<byte[]>> producers = new ArrayList<>();
                for (CompletableFuture<Producer<byte[]>> f : futures) {
                    producers.add(f.get());
                }
                conn = new Connection(client, producers, messageSize, transactions);
                log.info("connected to {} ({} partitions of {}, transactions {}, batch {}) in {} ms",
                        serviceUrl, partitions, topic, transactions, batchSize,
                        (System.nanoTime() - t0) / 1_000_000);
                write(ok(id));
            } catch (Throwable t) {
                log.warn("connect failed: {}", unwrap(t).toString());
                if (client != null) {
                    client.closeAsync();
                }
                connectAsked.set(false);
                replyFailure(id, t);
            }
        });
    }

    private void newTxn(long id, JsonNode req) throws Refusal {
        Connection c = connection();
        long timeoutMs = req.path("timeout_ms").asLong(60_000);
        c.client.newTransaction()
                .withTransactionTimeout(timeoutMs, TimeUnit.MILLISECONDS)
                .build()
                .whenComplete((txn, e) -> {
                    if (e != null) {
                        replyFailure(id, e);
                        return;
                    }
                    TxnID t = txn.getTxnID();
                    txns.put(key(t.getMostSigBits(), t.getLeastSigBits()), txn);
                    ObjectNode r = ok(id);
                    r.putArray("txn").add(t.getMostSigBits()).add(t.getLeastSigBits());
                    write(r);
                });
    }

    /**
     * Register partitions with the transaction ahead of its sends: the client's own
     * registration (TransactionImpl.registerProducedTopic, which the first send in the
     * transaction to a partition otherwise starts and waits for; a second call returns the
     * same future), and subscriptions with it ahead of its acknowledgements
     * (TransactionImpl.registerAckedTopic, which a consumer's first ACK in the transaction on
     * a partition otherwise starts and waits for, keyed by the partition's topic and the
     * subscription). Answered when everything is registered, or at the first failure.
     */
    private void register(long id, JsonNode req) throws Refusal {
        Connection c = connection();
        Transaction txn = lookup(req.get("txn"));
        if (!(txn instanceof TransactionImpl impl)) {
            throw new Refusal("BadRequest", "transaction of type " + txn.getClass().getName());
        }
        JsonNode parts = req.get("partitions");
        if (parts == null || !parts.isArray()) {
            throw new Refusal("BadRequest", "partitions must be an array");
        }
        List<CompletableFuture<Void>> futures = new ArrayList<>();
        for (JsonNode p : parts) {
            int partition = p.asInt(-1);
            if (partition < 0 || partition >= c.producers.size()) {
                throw new Refusal("BadRequest", "no partition " + partition);
            }
            futures.add(impl.registerProducedTopic(c.producers.get(partition).getTopic()));
        }
        JsonNode subs = req.get("subscriptions");
        if (subs != null && !subs.isNull()) {
            if (!subs.isArray()) {
                throw new Refusal("BadRequest", "subscriptions must be an array");
            }
            for (JsonNode s : subs) {
                futures.add(impl.registerAckedTopic(text(s, "topic"), text(s, "subscription")));
            }
        }
        CompletableFuture.allOf(futures.toArray(new CompletableFuture[0])).whenComplete((v, e) -> {
            if (e != null) {
                replyFailure(id, e);
                return;
            }
            write(ok(id));
        });
    }

    private void send(long id, JsonNode req) throws Refusal {
        Connection c = connection();
        JsonNode txnNode = req.get("txn");
        Transaction txn = null;
        if (txnNode != null && !txnNode.isNull()) {
            txn = lookup(txnNode);
        } else if (c.transactions) {
            throw new Refusal("BadRequest", "send without txn on a transactional connection");
        }
        int partition = req.path("partition").asInt(-1);
        if (partition < 0 || partition >= c.producers.size()) {
            throw new Refusal("BadRequest", "no partition " + partition);
        }
        JsonNode numbers = req.get("numbers");
        if (numbers == null || !numbers.isArray()) {
            throw new Refusal("BadRequest", "numbers must be an array");
        }
        Producer<byte[]> producer = c.producers.get(partition);
        int n = numbers.size();
        MessageId[] ids = new MessageId[n];
        AtomicInteger left = new AtomicInteger(n);
        AtomicBoolean answered = new AtomicBoolean();
        if (n == 0) {
            write(idsReply(id, ids));
            return;
        }
        // All sends first (the client batches them), then flush; answer at the last receipt, or
        // at the first failure.
        for (int i = 0; i < n; i++) {
            final int k = i;
            byte[] payload = payload(numbers.get(i).asLong(), c.messageSize);
            CompletableFuture<MessageId> f;
            try {
                f = (txn != null ? producer.newMessage(txn) : producer.newMessage()).value(payload).sendAsync();
            } catch (Throwable t) {
                f = CompletableFuture.failedFuture(t);
            }
            f.whenComplete((mid, e) -> {
                if (e != null) {
                    if (answered.compareAndSet(false, true)) {
                        replyFailure(id, e);
                    }
                    return;
                }
                ids[k] = mid;
                if (left.decrementAndGet() == 0 && answered.compareAndSet(false, true)) {
                    write(idsReply(id, ids));
                }
            });
        }
        producer.flushAsync().whenComplete((v, e) -> {
            if (e != null) {
                log.warn("send {}: flush failed: {}", id, unwrap(e).toString());
            }
        });
    }

    private void end(long id, JsonNode req, boolean commit) throws Refusal {
        connection();
        JsonNode txnNode = req.get("txn");
        Transaction txn = lookup(txnNode);
        String k = key(txnNode.get(0).asLong(), txnNode.get(1).asLong());
        CompletableFuture<Void> f = commit ? txn.commit() : txn.abort();
        f.whenComplete((v, e) -> {
            if (e != null) {
                Throwable u = unwrap(e);
                log.info("{} {} failed: {}", commit ? "commit" : "abort", k, u.toString());
                replyFailure(id, u);
                return;
            }
            txns.remove(k, txn);
            write(ok(id));
        });
    }

    private void subscribe(long id, JsonNode req) throws Refusal {
        Connection c = connection();
        String topic = text(req, "topic");
        String subscription = text(req, "subscription");
        String consumerName = text(req, "consumer_name");
        int queue = req.path("receiver_queue").asInt(1000);
        SubscriptionType type = switch (req.path("sub_type").asText("shared")) {
            case "shared" -> SubscriptionType.Shared;
            case "failover" -> SubscriptionType.Failover;
            case "key_shared" -> SubscriptionType.Key_Shared;
            case "exclusive" -> SubscriptionType.Exclusive;
            default -> throw new Refusal("BadRequest", "unknown sub_type " + req.path("sub_type"));
        };
        c.client.newConsumer(Schema.BYTES)
                .topic(topic)
                .subscriptionName(subscription)
                .subscriptionType(type)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .consumerName(consumerName)
                .receiverQueueSize(queue)
                .isAckReceiptEnabled(true)
                .enableBatchIndexAcknowledgment(true)
                .negativeAckRedeliveryDelay(100, TimeUnit.MILLISECONDS)
                .subscribeAsync()
                .whenComplete((consumer, e) -> {
                    if (e != null) {
                        replyFailure(id, e);
                        return;
                    }
                    long handle = nextConsumer.getAndIncrement();
                    consumers.put(handle, new Input(consumer));
                    log.info("consumer {} on {} ({}, {})", handle, topic, subscription, type);
                    ObjectNode r = ok(id);
                    r.put("consumer", handle);
                    write(r);
                });
    }

    /**
     * Up to max messages: waits at most wait_ms for the first (the client's blocking receive
     * with a timeout, on a thread of its own), then takes what the client has at hand.
     */
    private void receive(long id, JsonNode req) throws Refusal {
        Input in = input(req);
        int max = Math.max(1, req.path("max").asInt(1));
        long waitMs = Math.max(0, req.path("wait_ms").asLong(0));
        blocking.execute(() -> {
            try {
                List<Message<byte[]>> got = new ArrayList<>();
                Message<byte[]> m = in.consumer.receive((int) Math.min(Integer.MAX_VALUE, waitMs), TimeUnit.MILLISECONDS);
                while (m != null) {
                    got.add(m);
                    if (got.size() >= max) {
                        break;
                    }
                    m = in.consumer.receive(0, TimeUnit.MILLISECONDS);
                }
                ObjectNode r = ok(id);
                ArrayNode a = r.putArray("messages");
                for (Message<byte[]> msg : got) {
                    MessageId mid = msg.getMessageId();
                    ObjectNode o = a.addObject();
                    ArrayNode ids = o.putArray("id");
                    if (mid instanceof MessageIdAdv adv) {
                        ids.add(adv.getLedgerId()).add(adv.getEntryId()).add(adv.getBatchIndex());
                        o.put("batch_size", adv.getBatchSize());
                        in.held.put(key3(adv.getLedgerId(), adv.getEntryId(), adv.getBatchIndex()), mid);
                    } else {
                        log.warn("unexpected message id type {}: {}", mid.getClass().getName(), mid);
                        ids.add(-1).add(-1).add(-1);
                    }
                    o.put("payload", new String(msg.getValue(), StandardCharsets.UTF_8));
                    o.put("redelivery_count", msg.getRedeliveryCount());
                }
                write(r);
            } catch (Throwable t) {
                replyFailure(id, t);
            }
        });
    }

    /**
     * Acknowledge each id (in the transaction, if any); answer at the first failure or when all
     * are answered, or with `each` once every id is answered, with one answer per id.
     */
    private void ack(long id, JsonNode req) throws Refusal {
        Input in = input(req);
        JsonNode txnNode = req.get("txn");
        Transaction txn = txnNode == null || txnNode.isNull() ? null : lookup(txnNode);
        List<MessageId> ids = heldIds(in, req, false);
        if (req.path("each").asBoolean(false)) {
            ackEach(id, in, txn, ids);
            return;
        }
        if (ids.isEmpty()) {
            write(ok(id));
            return;
        }
        AtomicInteger left = new AtomicInteger(ids.size());
        AtomicBoolean answered = new AtomicBoolean();
        for (MessageId mid : ids) {
            ackOne(in, txn, mid).whenComplete((v, e) -> {
                if (e != null) {
                    if (answered.compareAndSet(false, true)) {
                        replyFailure(id, e);
                    }
                    return;
                }
                if (left.decrementAndGet() == 0 && answered.compareAndSet(false, true)) {
                    write(ok(id));
                }
            });
        }
    }

    /**
     * The client's acknowledgement of one id (in the transaction, if any); once it completed
     * normally the id is no longer held (an abort's redelivery brings a new one).
     */
    private static CompletableFuture<Void> ackOne(Input in, Transaction txn, MessageId mid) {
        CompletableFuture<Void> f;
        try {
            f = txn != null ? in.consumer.acknowledgeAsync(mid, txn) : in.consumer.acknowledgeAsync(mid);
        } catch (Throwable t) {
            f = CompletableFuture.failedFuture(t);
        }
        return f.whenComplete((v, e) -> {
            if (e == null && mid instanceof MessageIdAdv adv) {
                in.held.remove(key3(adv.getLedgerId(), adv.getEntryId(), adv.getBatchIndex()), mid);
            }
        });
    }

    /** `ack` with `each`: every id acknowledged at once; the reply's `answers` holds, in the
     * ids' order, null for an acknowledgement that completed normally or the client's error. */
    private void ackEach(long id, Input in, Transaction txn, List<MessageId> ids) {
        int n = ids.size();
        Throwable[] failed = new Throwable[n];
        AtomicInteger left = new AtomicInteger(n);
        Runnable answer = () -> {
            ObjectNode r = ok(id);
            ArrayNode a = r.putArray("answers");
            for (Throwable t : failed) {
                if (t == null) {
                    a.addNull();
                } else {
                    a.add(errorNode(t));
                }
            }
            write(r);
        };
        if (n == 0) {
            answer.run();
            return;
        }
        for (int i = 0; i < n; i++) {
            int at = i;
            ackOne(in, txn, ids.get(i)).whenComplete((v, e) -> {
                if (e != null) {
                    failed[at] = e;
                }
                // The last completion publishes every earlier write (the counter's ordering).
                if (left.decrementAndGet() == 0) {
                    answer.run();
                }
            });
        }
    }

    /**
     * Hand messages back: negativeAcknowledge each id (the client asks the broker to redeliver
     * them after its nack delay, 100 ms here); no ids: redeliverUnacknowledgedMessages().
     */
    private void nack(long id, JsonNode req) throws Refusal {
        Input in = input(req);
        JsonNode idsNode = req.get("ids");
        if (idsNode == null || !idsNode.isArray() || idsNode.isEmpty()) {
            in.consumer.redeliverUnacknowledgedMessages();
        } else {
            for (MessageId mid : heldIds(in, req, true)) {
                in.consumer.negativeAcknowledge(mid);
            }
        }
        write(ok(id));
    }

    private void closeConsumer(long id, JsonNode req) throws Refusal {
        long handle = req.path("consumer").asLong(0);
        Input in = input(req);
        consumers.remove(handle, in);
        in.consumer.closeAsync().whenComplete((v, e) -> {
            if (e != null) {
                replyFailure(id, e);
                return;
            }
            write(ok(id));
        });
    }

    private void close(long id) {
        Connection c = conn;
        blocking.execute(() -> {
            if (c != null) {
                try {
                    c.client.closeAsync().get(5, TimeUnit.SECONDS);
                } catch (Throwable t) {
                    log.warn("closing the client: {}", unwrap(t).toString());
                }
            }
            write(ok(id));
            System.err.flush();
            Runtime.getRuntime().halt(0);
        });
    }

    // ---- helpers ----

    private Connection connection() throws Refusal {
        Connection c = conn;
        if (c == null) {
            throw new Refusal("NotConnected", "no successful connect yet");
        }
        return c;
    }

    private Transaction lookup(JsonNode txnNode) throws Refusal {
        if (txnNode == null || !txnNode.isArray() || txnNode.size() != 2
                || !txnNode.get(0).canConvertToLong() || !txnNode.get(1).canConvertToLong()) {
            throw new Refusal("BadRequest", "txn must be [most, least]");
        }
        String k = key(txnNode.get(0).asLong(), txnNode.get(1).asLong());
        Transaction t = txns.get(k);
        if (t == null) {
            throw new Refusal("UnknownTxn", "no open transaction (" + k + ") in this driver");
        }
        return t;
    }

    private Input input(JsonNode req) throws Refusal {
        connection();
        long handle = req.path("consumer").asLong(0);
        Input in = consumers.get(handle);
        if (in == null) {
            throw new Refusal("UnknownConsumer", "no consumer " + handle + " in this driver");
        }
        return in;
    }

    /**
     * The client's own MessageId objects of the request's ids. An ack needs every one (an id
     * never received is UnknownMessage); a hand-back (take) removes them from `held` and skips
     * the ones it no longer holds.
     */
    private static List<MessageId> heldIds(Input in, JsonNode req, boolean take) throws Refusal {
        JsonNode idsNode = req.get("ids");
        if (idsNode == null || !idsNode.isArray()) {
            throw new Refusal("BadRequest", "ids must be an array");
        }
        List<MessageId> out = new ArrayList<>();
        for (JsonNode n : idsNode) {
            if (!n.isArray() || n.size() < 3) {
                throw new Refusal("BadRequest", "an id must be [ledger, entry, batch_index]");
            }
            String k = key3(n.get(0).asLong(), n.get(1).asLong(), n.get(2).asInt());
            MessageId mid = take ? in.held.remove(k) : in.held.get(k);
            if (mid == null && !take) {
                throw new Refusal("UnknownMessage", "no message " + k + " received by this consumer");
            }
            if (mid != null) {
                out.add(mid);
            }
        }
        return out;
    }

    private static String key3(long ledger, long entry, int batchIndex) {
        return ledger + ":" + entry + ":" + batchIndex;
    }

    private static String key(long most, long least) {
        return most + ":" + least;
    }

    private static String text(JsonNode req, String field) throws Refusal {
        JsonNode n = req.get(field);
        if (n == null || !n.isTextual()) {
            throw new Refusal("BadRequest", "missing string field '" + field + "'");
        }
        return n.asText();
    }

    /** The number in decimal ASCII, padded with spaces to size bytes. */
    static byte[] payload(long number, int size) {
        byte[] digits = Long.toString(number).getBytes(StandardCharsets.US_ASCII);
        if (digits.length >= size) {
            return digits;
        }
        byte[] p = new byte[size];
        System.arraycopy(digits, 0, p, 0, digits.length);
        Arrays.fill(p, digits.length, size, (byte) ' ');
        return p;
    }

    private ObjectNode idsReply(long id, MessageId[] ids) {
        ObjectNode r = ok(id);
        ArrayNode a = r.putArray("ids");
        for (MessageId m : ids) {
            ArrayNode e = a.addArray();
            if (m instanceof MessageIdAdv adv) {
                e.add(adv.getLedgerId()).add(adv.getEntryId()).add(adv.getBatchIndex());
            } else {
                // Not expected from a producer on a single partition; keep the text in the log.
                log.warn("unexpected message id type {}: {}", m.getClass().getName(), m);
                e.add(-1).add(-1).add(-1);
            }
        }
        return r;
    }

    private static ObjectNode ok(long id) {
        ObjectNode r = JSON.createObjectNode();
        r.put("id", id);
        r.put("ok", true);
        return r;
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private void replyFailure(long id, Throwable t) {
        ObjectNode r = JSON.createObjectNode();
        r.put("id", id);
        r.put("ok", false);
        r.set("error", errorNode(t));
        write(r);
    }

    /** The client's failure as a reply's `error` object: class, message, causes. */
    private static ObjectNode errorNode(Throwable t) {
        Throwable u = unwrap(t);
        List<String> causes = new ArrayList<>();
        Throwable c = u.getCause();
        while (c != null && causes.size() < 16) {
            causes.add(c.toString());
            if (c.getCause() == c) {
                break;
            }
            c = c.getCause();
        }
        return errorObject(u.getClass().getName(), u.getMessage() == null ? "" : u.getMessage(), causes);
    }

    private static ObjectNode errorObject(String cls, String message, List<String> causes) {
        ObjectNode e = JSON.createObjectNode();
        e.put("class", cls);
        e.put("message", message);
        ArrayNode a = e.putArray("causes");
        causes.forEach(a::add);
        return e;
    }

    private void replyError(long id, String cls, String message, List<String> causes) {
        ObjectNode r = JSON.createObjectNode();
        r.put("id", id);
        r.put("ok", false);
        r.set("error", errorObject(cls, message, causes));
        write(r);
    }

    private void write(ObjectNode reply) {
        try {
            byte[] line = (JSON.writeValueAsString(reply) + "\n").getBytes(StandardCharsets.UTF_8);
            synchronized (writeLock) {
                out.write(line);
                out.flush();
            }
        } catch (Exception e) {
            // stdout gone: the harness is gone; exit like on end of input.
            log.error("writing a reply failed: exiting", e);
            Runtime.getRuntime().halt(0);
        }
    }
}
