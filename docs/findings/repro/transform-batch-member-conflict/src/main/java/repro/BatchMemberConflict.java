package repro;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.transaction.Transaction;

/**
 * Consume-transform-produce on a batched input entry of 4 messages: transaction T1 takes all
 * four (publishes "out-" + value, acknowledges each message id; before the fourth, a control
 * transaction's acknowledgement of the first must be refused), then transaction T2
 * acknowledges the first message again while T1 is still open. Pulsar must refuse T2's
 * acknowledgement (TransactionConflictException). If it accepts it, T2 publishes that input's
 * output too and both commit; the output topic is read back.
 *
 * Exit 0: T2's acknowledgement refused, every output once. Exit 1: accepted (the bug).
 * Exit 2: the setup did not give one entry of 4 messages, or another error.
 */
public final class BatchMemberConflict {
    private static final int MEMBERS = 4;

    public static void main(String[] args) throws Exception {
        String url = args.length > 0 ? args[0] : "pulsar://127.0.0.1:6650";
        String base = "persistent://public/default/batch-member-" + System.currentTimeMillis();
        String in = base + "-in";
        String out = base + "-out";
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url)
                .enableTransaction(true).build()) {
            System.exit(run(client, in, out));
        }
    }

    private static int run(PulsarClient client, String in, String out) throws Exception {
        Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(in)
                .subscriptionName("transform").subscriptionType(SubscriptionType.Shared)
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
        Consumer<String> readBack = client.newConsumer(Schema.STRING).topic(out)
                .subscriptionName("read-back")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
        Producer<String> input = client.newProducer(Schema.STRING).topic(in)
                .enableBatching(true).batchingMaxMessages(MEMBERS)
                .batchingMaxPublishDelay(10, TimeUnit.SECONDS).create();
        Producer<String> output = client.newProducer(Schema.STRING).topic(out)
                .enableBatching(false).sendTimeout(0, TimeUnit.SECONDS).create();

        List<CompletableFuture<?>> sends = new ArrayList<>();
        for (int i = 0; i < MEMBERS; i++) {
            sends.add(input.sendAsync("v" + i));
        }
        input.flush();
        CompletableFuture.allOf(sends.toArray(new CompletableFuture[0])).get(30, TimeUnit.SECONDS);

        List<Message<String>> taken = new ArrayList<>();
        for (int i = 0; i < MEMBERS; i++) {
            Message<String> m = consumer.receive(30, TimeUnit.SECONDS);
            if (m == null) {
                System.out.println("SETUP: only " + taken.size() + " input messages received");
                return 2;
            }
            taken.add(m);
        }
        System.out.println("input " + in + ": " + MEMBERS + " messages, ids "
                + taken.stream().map(m -> m.getMessageId().toString()).toList());
        if (taken.stream().map(m -> entryOf(m.getMessageId().toString())).distinct().count() != 1) {
            System.out.println("SETUP: the messages are not one batched entry; run again");
            return 2;
        }

        Transaction t1 = newTxn(client);
        Message<String> again = taken.get(0);
        for (int i = 0; i < MEMBERS; i++) {
            Message<String> m = taken.get(i);
            if (i == MEMBERS - 1) {
                // Control: while T1 holds 3 of the 4 messages, another transaction's
                // acknowledgement of one of them is refused.
                Transaction tc = newTxn(client);
                try {
                    consumer.acknowledgeAsync(again.getMessageId(), tc).get(30, TimeUnit.SECONDS);
                    System.out.println("control: T1 holds 3 of 4; " + tc.getTxnID() + "'s acknowledgement of "
                            + again.getMessageId() + " completed normally (not refused)");
                } catch (ExecutionException e) {
                    System.out.println("control: T1 holds 3 of 4; " + tc.getTxnID() + "'s acknowledgement of "
                            + again.getMessageId() + " refused: " + e.getCause());
                }
                tc.abort().get(30, TimeUnit.SECONDS);
            }
            output.newMessage(t1).value("out-" + m.getValue()).send();
            consumer.acknowledgeAsync(m.getMessageId(), t1).get(30, TimeUnit.SECONDS);
        }
        System.out.println("T1 " + t1.getTxnID() + ": published 4 outputs and acknowledged the 4 inputs"
                + " (each acknowledgement answered), still open");

        Transaction t2 = newTxn(client);
        System.out.println("T2 " + t2.getTxnID() + ": acknowledges " + again.getMessageId()
                + " (" + again.getValue() + "), which open T1 holds acknowledged");
        System.out.println("EXPECTED: T2's acknowledgement fails with TransactionConflictException;"
                + " the output holds out-v0..out-v3 once each");
        try {
            consumer.acknowledgeAsync(again.getMessageId(), t2).get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            System.out.println("SAW: T2's acknowledgement refused: " + e.getCause());
            t2.abort().get(30, TimeUnit.SECONDS);
            t1.commit().get(30, TimeUnit.SECONDS);
            System.out.println("T2 aborted, T1 committed: as expected");
            return 0;
        }
        System.out.println("SAW: T2's acknowledgement of " + again.getMessageId() + " completed normally");
        output.newMessage(t2).value("out-" + again.getValue()).send();
        t2.commit().get(30, TimeUnit.SECONDS);
        System.out.println("T2 published out-" + again.getValue() + " and committed");
        t1.commit().get(30, TimeUnit.SECONDS);
        System.out.println("T1 committed");

        Map<String, Integer> copies = new TreeMap<>();
        Message<String> m;
        while ((m = readBack.receive(5, TimeUnit.SECONDS)) != null) {
            copies.merge(m.getValue(), 1, Integer::sum);
            readBack.acknowledge(m);
        }
        System.out.println("output " + out + " read back: " + copies);
        System.out.println("RESULT: input " + again.getValue() + " was acknowledged in two"
                + " transactions that both committed; its output is there "
                + copies.getOrDefault("out-" + again.getValue(), 0) + " times");
        return 1;
    }

    private static Transaction newTxn(PulsarClient client) throws Exception {
        return client.newTransaction().withTransactionTimeout(2, TimeUnit.MINUTES).build()
                .get(30, TimeUnit.SECONDS);
    }

    /** "ledger:entry" of a message id's text "ledger:entry:partition:batchIndex". */
    private static String entryOf(String id) {
        String[] p = id.split(":");
        return p[0] + ":" + p[1];
    }
}
