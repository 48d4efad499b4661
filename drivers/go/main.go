// The pulsar-chaos driver for the official Go client (github.com/apache/pulsar-client-go).
//
// It speaks protocol version 1 of docs/drivers.md: one JSON request per line on stdin, one
// JSON reply per line on stdout, pipelined (one goroutine per request, replies in completion
// order). stdout carries protocol lines only; the client's log and the driver's own go to
// stderr. The driver never interprets an error: it reports the client's answer verbatim.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"
)

const (
	protocolVersion = 1
	library         = "github.com/apache/pulsar-client-go"
	// How long the driver waits for a best-effort close of its client before it exits.
	closeGrace = 2 * time.Second
	// Successfully ended transactions are remembered (so that a second commit or abort of
	// the same id reaches the client's own transaction object) up to this many; older ones
	// are forgotten and answered UnknownTxn. Transactions whose end failed are never
	// forgotten: the harness may ask again.
	endedKept = 10000
)

// request is the union of every op's fields.
type request struct {
	ID           int64           `json:"id"`
	Op           string          `json:"op"`
	ServiceURL   string          `json:"service_url"`
	Topic        string          `json:"topic"`
	Partitions   int             `json:"partitions"`
	OpTimeoutMs  int64           `json:"op_timeout_ms"`
	BatchSize    int             `json:"batch_size"`
	MessageSize  int             `json:"message_size"`
	Transactions bool            `json:"transactions"`
	ProducerName string          `json:"producer_name"`
	TimeoutMs    int64           `json:"timeout_ms"`
	Txn          json.RawMessage `json:"txn"`
	Partition    int             `json:"partition"`
	Numbers      []uint64        `json:"numbers"`
	Subscription string          `json:"subscription"`
	SubType      string          `json:"sub_type"`
	ConsumerName string          `json:"consumer_name"`
	ReceiverQ    int             `json:"receiver_queue"`
	Consumer     int64           `json:"consumer"`
	Max          int             `json:"max"`
	WaitMs       int64           `json:"wait_ms"`
	IDs          [][]int64       `json:"ids"`
}

// input is a consumer the driver subscribed, and the messages it received that are neither
// acknowledged nor handed back (by "ledger:entry:batch_index"), for ack and nack to find the
// client's own Message.
type input struct {
	consumer     pulsar.Consumer
	subscription string
	mu           sync.Mutex
	held         map[string]pulsar.Message
}

type errorBody struct {
	Class   string   `json:"class"`
	Message string   `json:"message"`
	Causes  []string `json:"causes"`
}

type txnKey [2]uint64

// txnEntry is a transaction and the guard around the client's registration of its partitions
// and subscriptions. v0.19.0 looks each up in a plain map before taking its lock
// (transaction_impl.go, registerProducerTopic and registerAckTopic), so a first send or
// transactional acknowledgement on one partition writing the map while another partition's
// reads it is a data race, and Go ends the process with "fatal error: concurrent map read and
// map write" (apache/pulsar-client-go#1536). The driver lets a call that may register (its
// topic not yet registered for this transaction) run alone, and the others together.
type txnEntry struct {
	txn pulsar.Transaction
	reg sync.RWMutex
	mu  sync.Mutex
	// Topics (sends) and topic/subscription pairs (acknowledgements) whose registration
	// succeeded: the client's map holds them, so a call on one of them only reads it.
	known map[string]bool
}

// enter waits until a call on `key` may run: alone when `key` may still be registered,
// beside other known keys' calls otherwise. The returned function ends the call's turn.
func (e *txnEntry) enter(key string) func() {
	e.mu.Lock()
	known := e.known[key]
	e.mu.Unlock()
	if known {
		e.reg.RLock()
		return e.reg.RUnlock
	}
	e.reg.Lock()
	return e.reg.Unlock
}

// registered records that the client holds `key` for this transaction.
func (e *txnEntry) registered(key string) {
	e.mu.Lock()
	e.known[key] = true
	e.mu.Unlock()
}

type driver struct {
	log *slog.Logger

	outMu sync.Mutex
	out   *os.File

	connMu      sync.Mutex
	connecting  bool
	client      pulsar.Client
	producers   []pulsar.Producer
	batching    bool
	messageSize int
	txnsEnabled bool

	txnMu sync.Mutex
	txns  map[txnKey]*txnEntry
	ended []txnKey // successfully ended, oldest first

	inMu         sync.Mutex
	inputs       map[int64]*input
	nextConsumer int64
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d := &driver{log: logger, out: os.Stdout, txns: make(map[txnKey]*txnEntry),
		inputs: make(map[int64]*input)}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			d.dispatch(line)
		}
		if err != nil {
			// End of input (or a read error): the harness is gone. Exit at once.
			logger.Info("stdin closed; exiting", "err", err)
			d.shutdown()
			os.Exit(0)
		}
	}
}

func (d *driver) dispatch(line []byte) {
	var r request
	if err := json.Unmarshal(line, &r); err != nil {
		var idOnly struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(line, &idOnly)
		d.fail(idOnly.ID, "BadRequest", fmt.Sprintf("cannot parse request: %v", err), nil)
		return
	}
	if r.Op == "close" {
		// Answered before the driver exits; requests still running are abandoned.
		d.reply(r.ID, nil)
		d.shutdown()
		os.Exit(0)
	}
	go d.handle(&r)
}

// recovered turns a panic in a callback the client runs on its own goroutine (where it would
// end the process) into an error for the call it belongs to, through report.
func (d *driver) recovered(where string, report func(error)) {
	if v := recover(); v != nil {
		d.log.Error("panic in "+where, "panic", v, "stack", string(debug.Stack()))
		report(fmt.Errorf("panic in the driver's %s: %v", where, v))
	}
}

// shutdown closes the client, best effort and bounded in time.
func (d *driver) shutdown() {
	d.connMu.Lock()
	client, producers := d.client, d.producers
	d.connMu.Unlock()
	if client == nil {
		return
	}
	done := make(chan struct{})
	go func() {
		for _, p := range producers {
			p.Close()
		}
		client.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeGrace):
		d.log.Warn("client close did not finish in time; exiting anyway")
	}
}

func (d *driver) handle(r *request) {
	defer func() {
		if v := recover(); v != nil {
			// A panic in the driver's own code is the driver's answer, not the client's.
			d.log.Error("panic while handling a request", "op", r.Op, "panic", v, "stack", string(debug.Stack()))
			d.fail(r.ID, "DriverError", fmt.Sprintf("panic in the driver handling %s: %v", r.Op, v), nil)
		}
	}()
	switch r.Op {
	case "hello":
		d.reply(r.ID, map[string]any{
			"client":   "go",
			"library":  library,
			"version":  libraryVersion(),
			"protocol": protocolVersion,
		})
	case "connect":
		d.connect(r)
	case "new_txn":
		d.newTxn(r)
	case "send":
		d.send(r)
	case "commit", "abort":
		d.end(r)
	case "subscribe":
		d.subscribe(r)
	case "receive":
		d.receive(r)
	case "ack":
		d.ack(r)
	case "nack":
		d.nack(r)
	case "close_consumer":
		d.closeConsumer(r)
	default:
		d.fail(r.ID, "BadRequest", fmt.Sprintf("unknown op %q", r.Op), nil)
	}
}

func libraryVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range info.Deps {
		if m.Path == library {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return "unknown"
}

func (d *driver) connect(r *request) {
	if r.Partitions <= 0 || r.Topic == "" || r.ServiceURL == "" {
		d.fail(r.ID, "BadRequest", "connect needs service_url, topic and partitions > 0", nil)
		return
	}
	d.connMu.Lock()
	if d.connecting || d.client != nil {
		d.connMu.Unlock()
		d.fail(r.ID, "BadRequest", "only one connect per process", nil)
		return
	}
	d.connecting = true
	d.connMu.Unlock()

	client, producers, err := d.open(r)

	d.connMu.Lock()
	d.connecting = false
	if err == nil {
		d.client, d.producers = client, producers
		d.batching = r.BatchSize > 1
		d.messageSize = r.MessageSize
		d.txnsEnabled = r.Transactions
	}
	d.connMu.Unlock()
	if err != nil {
		d.failErr(r.ID, err)
		return
	}
	d.reply(r.ID, nil)
}

func (d *driver) open(r *request) (pulsar.Client, []pulsar.Producer, error) {
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               r.ServiceURL,
		OperationTimeout:  time.Duration(r.OpTimeoutMs) * time.Millisecond,
		EnableTransaction: r.Transactions,
		Logger:            plog.NewLoggerWithSlog(d.log.With("src", "pulsar-client-go")),
	})
	if err != nil {
		return nil, nil, err
	}
	producers := make([]pulsar.Producer, r.Partitions)
	errs := make([]error, r.Partitions)
	var wg sync.WaitGroup
	for i := 0; i < r.Partitions; i++ {
		topic := fmt.Sprintf("%s-partition-%d", r.Topic, i)
		if r.Partitions == 1 {
			// One partition: the harness made a topic without partitions.
			topic = r.Topic
		}
		opts := pulsar.ProducerOptions{
			Topic: topic,
			Name:  fmt.Sprintf("%s-p%d", r.ProducerName, i),
		}
		if r.ProducerName == "" {
			opts.Name = ""
		}
		if r.Transactions {
			// Negative disables the send timeout (producer.go SendTimeout: "negative such as
			// -1 to disable"); 0 would mean the 30 s default.
			opts.SendTimeout = -1
		}
		if r.BatchSize <= 1 {
			opts.DisableBatching = true
		} else {
			opts.BatchingMaxMessages = uint(r.BatchSize)
		}
		wg.Add(1)
		go func(i int, opts pulsar.ProducerOptions) {
			defer wg.Done()
			producers[i], errs[i] = client.CreateProducer(opts)
		}(i, opts)
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			for _, p := range producers {
				if p != nil {
					p.Close()
				}
			}
			client.Close()
			return nil, nil, e
		}
	}
	return client, producers, nil
}

// connected returns the client and producers, or false before a successful connect.
func (d *driver) connected() (pulsar.Client, []pulsar.Producer, bool) {
	d.connMu.Lock()
	defer d.connMu.Unlock()
	return d.client, d.producers, d.client != nil
}

func (d *driver) newTxn(r *request) {
	client, _, ok := d.connected()
	if !ok {
		d.fail(r.ID, "BadRequest", "new_txn before connect", nil)
		return
	}
	txn, err := client.NewTransaction(time.Duration(r.TimeoutMs) * time.Millisecond)
	if err != nil {
		d.failErr(r.ID, err)
		return
	}
	id := txn.GetTxnID()
	key := txnKey{id.MostSigBits, id.LeastSigBits}
	d.txnMu.Lock()
	d.txns[key] = &txnEntry{txn: txn, known: make(map[string]bool)}
	d.txnMu.Unlock()
	d.reply(r.ID, map[string]any{"txn": key})
}

// parseTxn reads a `txn` field: null (nil, true) or [most, least]. Signed values (a Java
// long) are taken bit for bit.
func parseTxn(raw json.RawMessage) (*txnKey, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	var parts []json.Number
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&parts); err != nil || len(parts) != 2 {
		return nil, fmt.Errorf("txn must be [most, least] or null, got %s", s)
	}
	var k txnKey
	for i, p := range parts {
		if u, err := strconv.ParseUint(p.String(), 10, 64); err == nil {
			k[i] = u
		} else if v, err := strconv.ParseInt(p.String(), 10, 64); err == nil {
			k[i] = uint64(v)
		} else {
			return nil, fmt.Errorf("txn must be [most, least] or null, got %s", s)
		}
	}
	return &k, nil
}

// lookupTxn answers the request itself (BadRequest or UnknownTxn) when it returns false.
func (d *driver) lookupTxn(r *request) (*txnEntry, bool) {
	key, err := parseTxn(r.Txn)
	if err != nil {
		d.fail(r.ID, "BadRequest", err.Error(), nil)
		return nil, false
	}
	if key == nil {
		return nil, true
	}
	d.txnMu.Lock()
	txn, ok := d.txns[*key]
	d.txnMu.Unlock()
	if !ok {
		d.fail(r.ID, "UnknownTxn", fmt.Sprintf("the driver has no transaction [%d, %d]", key[0], key[1]), nil)
		return nil, false
	}
	return txn, true
}

func payload(n uint64, size int) []byte {
	p := []byte(strconv.FormatUint(n, 10))
	for len(p) < size {
		p = append(p, ' ')
	}
	return p
}

func (d *driver) send(r *request) {
	_, producers, ok := d.connected()
	if !ok {
		d.fail(r.ID, "BadRequest", "send before connect", nil)
		return
	}
	if r.Partition < 0 || r.Partition >= len(producers) {
		d.fail(r.ID, "BadRequest", fmt.Sprintf("partition %d out of range", r.Partition), nil)
		return
	}
	txn, ok := d.lookupTxn(r)
	if !ok {
		return
	}
	d.connMu.Lock()
	batching, size := d.batching, d.messageSize
	d.connMu.Unlock()
	p := producers[r.Partition]

	ids := make([][3]int64, len(r.Numbers))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	ctx := context.Background()
	// The client registers the partition with the transaction inside SendAsync, before it
	// returns (a failed registration calls back at once), so the guard covers the calls only.
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	key := "send:" + p.Topic()
	leave := func() {}
	if txn != nil {
		leave = txn.enter(key)
	}
	for i, n := range r.Numbers {
		msg := &pulsar.ProducerMessage{Payload: payload(n, size)}
		if txn != nil {
			msg.Transaction = txn.txn
		}
		wg.Add(1)
		i := i
		p.SendAsync(ctx, msg, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			defer wg.Done()
			defer d.recovered("send callback", fail)
			if err != nil {
				fail(err)
				return
			}
			batch := int64(-1)
			if batching {
				batch = int64(id.BatchIdx())
			}
			ids[i] = [3]int64{id.LedgerID(), id.EntryID(), batch}
		})
		if i == 0 && txn != nil {
			mu.Lock()
			ok := firstErr == nil
			mu.Unlock()
			if ok {
				txn.registered(key)
			}
		}
	}
	leave()
	if err := p.Flush(); err != nil {
		d.log.Warn("flush failed", "id", r.ID, "err", err)
	}
	wg.Wait()
	if firstErr != nil {
		d.failErr(r.ID, firstErr)
		return
	}
	d.reply(r.ID, map[string]any{"ids": ids})
}

func (d *driver) end(r *request) {
	if _, _, ok := d.connected(); !ok {
		d.fail(r.ID, "BadRequest", r.Op+" before connect", nil)
		return
	}
	key, err := parseTxn(r.Txn)
	if err != nil || key == nil {
		msg := "txn is required"
		if err != nil {
			msg = err.Error()
		}
		d.fail(r.ID, "BadRequest", msg, nil)
		return
	}
	txn, ok := d.lookupTxn(r)
	if !ok {
		return
	}
	if r.Op == "commit" {
		err = txn.txn.Commit(context.Background())
	} else {
		err = txn.txn.Abort(context.Background())
	}
	if err != nil {
		d.failErr(r.ID, err)
		return
	}
	d.txnMu.Lock()
	d.ended = append(d.ended, *key)
	if len(d.ended) > endedKept {
		delete(d.txns, d.ended[0])
		d.ended = d.ended[1:]
	}
	d.txnMu.Unlock()
	d.reply(r.ID, nil)
}

// ---- the consuming side ----

func msgKey(ledger, entry int64, batch int32) string {
	return fmt.Sprintf("%d:%d:%d", ledger, entry, batch)
}

func (d *driver) subscribe(r *request) {
	client, _, ok := d.connected()
	if !ok {
		d.fail(r.ID, "BadRequest", "subscribe before connect", nil)
		return
	}
	var t pulsar.SubscriptionType
	switch r.SubType {
	case "", "shared":
		t = pulsar.Shared
	case "failover":
		t = pulsar.Failover
	case "key_shared":
		t = pulsar.KeyShared
	case "exclusive":
		t = pulsar.Exclusive
	default:
		d.fail(r.ID, "BadRequest", fmt.Sprintf("unknown sub_type %q", r.SubType), nil)
		return
	}
	q := r.ReceiverQ
	if q <= 0 {
		q = 1000
	}
	c, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:                          r.Topic,
		SubscriptionName:               r.Subscription,
		Type:                           t,
		Name:                           r.ConsumerName,
		SubscriptionInitialPosition:    pulsar.SubscriptionPositionEarliest,
		ReceiverQueueSize:              q,
		AckWithResponse:                true,
		EnableBatchIndexAcknowledgment: true,
		NackRedeliveryDelay:            100 * time.Millisecond,
	})
	if err != nil {
		d.failErr(r.ID, err)
		return
	}
	d.inMu.Lock()
	d.nextConsumer++
	h := d.nextConsumer
	d.inputs[h] = &input{consumer: c, subscription: r.Subscription, held: make(map[string]pulsar.Message)}
	d.inMu.Unlock()
	d.log.Info("subscribed", "consumer", h, "topic", r.Topic, "subscription", r.Subscription, "type", r.SubType)
	d.reply(r.ID, map[string]any{"consumer": h})
}

// lookupInput answers the request itself (UnknownConsumer) when it returns nil.
func (d *driver) lookupInput(r *request) *input {
	d.inMu.Lock()
	in := d.inputs[r.Consumer]
	d.inMu.Unlock()
	if in == nil {
		d.fail(r.ID, "UnknownConsumer", fmt.Sprintf("the driver has no consumer %d", r.Consumer), nil)
	}
	return in
}

// receive waits up to wait_ms for a first message, then takes what the client has at hand,
// up to max in all.
func (d *driver) receive(r *request) {
	in := d.lookupInput(r)
	if in == nil {
		return
	}
	max := r.Max
	if max <= 0 {
		max = 1
	}
	var got []pulsar.Message
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.WaitMs)*time.Millisecond)
	m, err := in.consumer.Receive(ctx)
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		d.failErr(r.ID, err)
		return
	}
	if m != nil {
		got = append(got, m)
	more:
		for len(got) < max {
			select {
			case cm, ok := <-in.consumer.Chan():
				if !ok {
					break more
				}
				got = append(got, cm.Message)
			default:
				break more
			}
		}
	}
	out := make([]map[string]any, 0, len(got))
	in.mu.Lock()
	for _, m := range got {
		id := m.ID()
		in.held[msgKey(id.LedgerID(), id.EntryID(), id.BatchIdx())] = m
		out = append(out, map[string]any{
			"id":               []int64{id.LedgerID(), id.EntryID(), int64(id.BatchIdx())},
			"batch_size":       id.BatchSize(),
			"payload":          string(m.Payload()),
			"redelivery_count": m.RedeliveryCount(),
		})
	}
	in.mu.Unlock()
	d.reply(r.ID, map[string]any{"messages": out})
}

// held gives the client's own messages of the request's ids: an ack needs every one
// (UnknownMessage otherwise); a hand-back (take) removes them and skips those not held.
func (d *driver) heldMessages(r *request, in *input, take bool) ([]pulsar.Message, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]pulsar.Message, 0, len(r.IDs))
	for _, id := range r.IDs {
		if len(id) < 3 {
			d.fail(r.ID, "BadRequest", "an id must be [ledger, entry, batch_index]", nil)
			return nil, false
		}
		k := msgKey(id[0], id[1], int32(id[2]))
		m, ok := in.held[k]
		if !ok {
			if take {
				continue
			}
			d.fail(r.ID, "UnknownMessage", fmt.Sprintf("no message %s received by this consumer", k), nil)
			return nil, false
		}
		if take {
			delete(in.held, k)
		}
		out = append(out, m)
	}
	return out, true
}

// ack acknowledges each id (with AckWithTxn in a transaction), all at once; the first failure
// is the answer.
func (d *driver) ack(r *request) {
	in := d.lookupInput(r)
	if in == nil {
		return
	}
	txn, ok := d.lookupTxn(r)
	if !ok {
		return
	}
	msgs, ok := d.heldMessages(r, in, false)
	if !ok {
		return
	}
	errs := make([]error, len(msgs))
	var wg sync.WaitGroup
	for i, m := range msgs {
		wg.Add(1)
		go func(i int, m pulsar.Message) {
			defer wg.Done()
			if txn != nil {
				// The client registers the subscription of the message's partition with the
				// transaction inside AckWithTxn (see txnEntry).
				key := fmt.Sprintf("ack:%s:%d|%s", m.Topic(), m.ID().PartitionIdx(), in.subscription)
				leave := txn.enter(key)
				errs[i] = in.consumer.AckWithTxn(m, txn.txn)
				if errs[i] == nil {
					txn.registered(key)
				}
				leave()
			} else {
				errs[i] = in.consumer.Ack(m)
			}
		}(i, m)
	}
	wg.Wait()
	// An acknowledged message is no longer held (an abort's redelivery brings a new one).
	in.mu.Lock()
	for i, m := range msgs {
		if errs[i] == nil {
			id := m.ID()
			delete(in.held, msgKey(id.LedgerID(), id.EntryID(), id.BatchIdx()))
		}
	}
	in.mu.Unlock()
	for _, e := range errs {
		if e != nil {
			d.failErr(r.ID, e)
			return
		}
	}
	d.reply(r.ID, nil)
}

// nack hands messages back with the client's Nack (redelivered after NackRedeliveryDelay,
// 100 ms here); without ids, every message the consumer holds unacknowledged (the Go client
// has no public redeliverUnacknowledgedMessages).
func (d *driver) nack(r *request) {
	in := d.lookupInput(r)
	if in == nil {
		return
	}
	var msgs []pulsar.Message
	if len(r.IDs) == 0 {
		in.mu.Lock()
		for k, m := range in.held {
			msgs = append(msgs, m)
			delete(in.held, k)
		}
		in.mu.Unlock()
	} else {
		var ok bool
		if msgs, ok = d.heldMessages(r, in, true); !ok {
			return
		}
	}
	for _, m := range msgs {
		in.consumer.Nack(m)
	}
	d.reply(r.ID, nil)
}

func (d *driver) closeConsumer(r *request) {
	in := d.lookupInput(r)
	if in == nil {
		return
	}
	d.inMu.Lock()
	delete(d.inputs, r.Consumer)
	d.inMu.Unlock()
	in.consumer.Close()
	d.reply(r.ID, nil)
}

// ---- replies ----

func (d *driver) write(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"id": v["id"], "ok": false,
			"error": errorBody{Class: "DriverError", Message: err.Error(), Causes: []string{}}})
	}
	b = append(b, '\n')
	d.outMu.Lock()
	defer d.outMu.Unlock()
	if _, err := d.out.Write(b); err != nil {
		d.log.Error("cannot write a reply; exiting", "err", err)
		os.Exit(0)
	}
}

func (d *driver) reply(id int64, fields map[string]any) {
	v := map[string]any{"id": id, "ok": true}
	for k, f := range fields {
		v[k] = f
	}
	d.write(v)
}

func (d *driver) fail(id int64, class, message string, causes []string) {
	if causes == nil {
		causes = []string{}
	}
	d.write(map[string]any{"id": id, "ok": false,
		"error": errorBody{Class: class, Message: message, Causes: causes}})
}

func (d *driver) failErr(id int64, err error) {
	d.fail(id, errorClass(err), err.Error(), causes(err))
}

// errorClass: the pulsar.Result name when the error is (or wraps) a *pulsar.Error, else the
// Go type as %T prints it (docs/drivers.md).
func errorClass(err error) string {
	var pe *pulsar.Error
	if errors.As(err, &pe) {
		return resultName(pe.Result())
	}
	return fmt.Sprintf("%T", err)
}

// causes lists the chain below err (errors.Unwrap, and every branch of an errors.Join), each
// as "<type>: <message>".
func causes(err error) []string {
	out := []string{}
	var walk func(e error)
	walk = func(e error) {
		var below []error
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			below = u.Unwrap()
		case interface{ Unwrap() error }:
			if w := u.Unwrap(); w != nil {
				below = []error{w}
			}
		}
		for _, b := range below {
			if b == nil {
				continue
			}
			out = append(out, fmt.Sprintf("%s: %s", errorClass(b), b.Error()))
			walk(b)
		}
	}
	walk(err)
	return out
}

// resultName spells a pulsar.Result as its Go constant. The client's own getResultStr is
// unexported and incomplete in v0.19.0 (InvalidStatus, ProducerFenced,
// MaxConcurrentOperationsReached and TransactionCoordinatorNotEnabled print as
// "Result(n)"), so the driver names the constants itself.
func resultName(r pulsar.Result) string {
	switch r {
	case pulsar.Ok:
		return "Ok"
	case pulsar.UnknownError:
		return "UnknownError"
	case pulsar.InvalidConfiguration:
		return "InvalidConfiguration"
	case pulsar.TimeoutError:
		return "TimeoutError"
	case pulsar.LookupError:
		return "LookupError"
	case pulsar.ConnectError:
		return "ConnectError"
	case pulsar.ReadError:
		return "ReadError"
	case pulsar.AuthenticationError:
		return "AuthenticationError"
	case pulsar.AuthorizationError:
		return "AuthorizationError"
	case pulsar.ErrorGettingAuthenticationData:
		return "ErrorGettingAuthenticationData"
	case pulsar.BrokerMetadataError:
		return "BrokerMetadataError"
	case pulsar.BrokerPersistenceError:
		return "BrokerPersistenceError"
	case pulsar.ChecksumError:
		return "ChecksumError"
	case pulsar.ConsumerBusy:
		return "ConsumerBusy"
	case pulsar.NotConnectedError:
		return "NotConnectedError"
	case pulsar.AlreadyClosedError:
		return "AlreadyClosedError"
	case pulsar.InvalidMessage:
		return "InvalidMessage"
	case pulsar.ConsumerNotInitialized:
		return "ConsumerNotInitialized"
	case pulsar.ProducerNotInitialized:
		return "ProducerNotInitialized"
	case pulsar.TooManyLookupRequestException:
		return "TooManyLookupRequestException"
	case pulsar.InvalidTopicName:
		return "InvalidTopicName"
	case pulsar.InvalidURL:
		return "InvalidURL"
	case pulsar.ServiceUnitNotReady:
		return "ServiceUnitNotReady"
	case pulsar.OperationNotSupported:
		return "OperationNotSupported"
	case pulsar.ProducerBlockedQuotaExceededError:
		return "ProducerBlockedQuotaExceededError"
	case pulsar.ProducerBlockedQuotaExceededException:
		return "ProducerBlockedQuotaExceededException"
	case pulsar.ProducerQueueIsFull:
		return "ProducerQueueIsFull"
	case pulsar.MessageTooBig:
		return "MessageTooBig"
	case pulsar.TopicNotFound:
		return "TopicNotFound"
	case pulsar.SubscriptionNotFound:
		return "SubscriptionNotFound"
	case pulsar.ConsumerNotFound:
		return "ConsumerNotFound"
	case pulsar.UnsupportedVersionError:
		return "UnsupportedVersionError"
	case pulsar.TopicTerminated:
		return "TopicTerminated"
	case pulsar.CryptoError:
		return "CryptoError"
	case pulsar.ConsumerClosed:
		return "ConsumerClosed"
	case pulsar.InvalidBatchBuilderType:
		return "InvalidBatchBuilderType"
	case pulsar.AddToBatchFailed:
		return "AddToBatchFailed"
	case pulsar.SeekFailed:
		return "SeekFailed"
	case pulsar.ProducerClosed:
		return "ProducerClosed"
	case pulsar.SchemaFailure:
		return "SchemaFailure"
	case pulsar.InvalidStatus:
		return "InvalidStatus"
	case pulsar.TransactionNoFoundError:
		return "TransactionNoFoundError"
	case pulsar.ClientMemoryBufferIsFull:
		return "ClientMemoryBufferIsFull"
	case pulsar.ProducerFenced:
		return "ProducerFenced"
	case pulsar.MaxConcurrentOperationsReached:
		return "MaxConcurrentOperationsReached"
	case pulsar.TransactionCoordinatorNotEnabled:
		return "TransactionCoordinatorNotEnabled"
	default:
		return fmt.Sprintf("Result(%d)", int(r))
	}
}
