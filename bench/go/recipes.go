// The Go side of bench/recipes.ts: the same measures with etcd 3.4's clientv3/concurrency, built
// offline by the bench (GO111MODULE=off GOPATH=/usr/share/gocode). One mode per run; it prints
// one JSON line with the samples (milliseconds, or cycles per second) and exits.
//
//	recipes-go handoff   -endpoint URL -samples N -gap-ms 5   (mutex: B queued gap before A unlocks)
//	recipes-go resign    -endpoint URL -samples N -gap-ms 5   (election: B campaigns, A resigns)
//	recipes-go cycles    -endpoint URL -contenders N -ms D    (lock/unlock loops for D ms)
//	    with -ready: prints "ready" once its sessions are open and starts on a line on stdin (one
//	    of several processes started together)
//	recipes-go leader    -endpoint URL -prefix P -ttl S       (campaign, print "leader", block)
//	recipes-go follow    -endpoint URL -prefix P -ttl S       (print "ready", campaign, print "elected")
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/concurrency"
)

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// newSession opens its own client, as a separate process would have.
func newSession(endpoint string, ttl int) *concurrency.Session {
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	must(err)
	session, err := concurrency.NewSession(client, concurrency.WithTTL(ttl))
	must(err)
	return session
}

func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func emit(samples []float64) { emitWith(samples, nil) }

// loop is what cycles mode adds: the cycles done and the process's CPU milliseconds over them.
type loop struct {
	Cycles int     `json:"cycles"`
	CPUMs  float64 `json:"cpuMs"`
}

func emitWith(samples []float64, measured *loop) {
	out, err := json.Marshal(struct {
		Samples []float64 `json:"samples"`
		*loop
	}{samples, measured})
	must(err)
	fmt.Println(string(out))
}

// handoffs: two sessions take turns holding; each sample times the holder's release call until
// the other, which called acquire gap earlier, holds.
func handoffs(samples int, gap time.Duration, acquire, release func(i int) error) []float64 {
	var out []float64
	must(acquire(0))
	for i := 0; i < samples; i++ {
		done := make(chan error, 1)
		var held time.Time
		go func(next int) {
			err := acquire(next)
			held = time.Now()
			done <- err
		}((i + 1) % 2)
		time.Sleep(gap)
		start := time.Now()
		must(release(i % 2))
		must(<-done)
		// Until the waiter holds, which may come before the release call returns.
		out = append(out, millis(held.Sub(start)))
	}
	must(release(samples % 2))
	return out
}

// handoff: the mutex's Unlock until the waiter holds.
func handoff(endpoint, prefix string, samples int, gap time.Duration) []float64 {
	ctx := context.Background()
	mutexes := []*concurrency.Mutex{
		concurrency.NewMutex(newSession(endpoint, 60), prefix),
		concurrency.NewMutex(newSession(endpoint, 60), prefix),
	}
	return handoffs(samples, gap,
		func(i int) error { return mutexes[i].Lock(ctx) },
		func(i int) error { return mutexes[i].Unlock(ctx) })
}

// resign: the leader's Resign until the candidate leads.
func resign(endpoint, prefix string, samples int, gap time.Duration) []float64 {
	ctx := context.Background()
	elections := []*concurrency.Election{
		concurrency.NewElection(newSession(endpoint, 60), prefix),
		concurrency.NewElection(newSession(endpoint, 60), prefix),
	}
	return handoffs(samples, gap,
		func(i int) error { return elections[i].Campaign(ctx, "candidate") },
		func(i int) error { return elections[i].Resign(ctx) })
}

// cpuMillis is the user plus system CPU time this process has used, in milliseconds.
func cpuMillis() float64 {
	var usage syscall.Rusage
	must(syscall.Getrusage(syscall.RUSAGE_SELF, &usage))
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e6
}

// cycles: contenders lock and unlock one mutex in a loop; one sample, the cycles per second, and
// the process's CPU milliseconds over the loop. With ready, it says "ready" once the sessions are
// open and starts on a line on stdin.
func cycles(endpoint, prefix string, contenders int, duration time.Duration, ready bool) ([]float64, *loop) {
	ctx := context.Background()
	mutexes := make([]*concurrency.Mutex, contenders)
	for i := range mutexes {
		mutexes[i] = concurrency.NewMutex(newSession(endpoint, 60), prefix)
	}
	if ready {
		fmt.Println("ready")
		_, err := bufio.NewReader(os.Stdin).ReadString('\n')
		must(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	cpuBefore := cpuMillis()
	start := time.Now()
	deadline := start.Add(duration)
	for _, m := range mutexes {
		wg.Add(1)
		go func(m *concurrency.Mutex) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				must(m.Lock(ctx))
				must(m.Unlock(ctx))
				mu.Lock()
				total++
				mu.Unlock()
			}
		}(m)
	}
	wg.Wait()
	rate := float64(total) / time.Since(start).Seconds()
	return []float64{rate}, &loop{Cycles: total, CPUMs: cpuMillis() - cpuBefore}
}

func main() {
	if len(os.Args) < 2 {
		must(fmt.Errorf("usage: recipes-go handoff|resign|cycles|leader|follow [flags]"))
	}
	mode := os.Args[1]
	flags := flag.NewFlagSet(mode, flag.ExitOnError)
	endpoint := flags.String("endpoint", "", "etcd client URL")
	prefix := flags.String("prefix", "bench/go", "lock or election name")
	samples := flags.Int("samples", 20, "samples to take")
	gapMs := flags.Int("gap-ms", 5, "how long the waiter is queued before the release")
	contenders := flags.Int("contenders", 2, "contenders in cycles mode")
	durationMs := flags.Int("ms", 1000, "duration of cycles mode")
	ttl := flags.Int("ttl", 1, "session TTL in leader and follow modes")
	ready := flags.Bool("ready", false, "cycles mode: print ready, start on a line on stdin")
	must(flags.Parse(os.Args[2:]))
	gap := time.Duration(*gapMs) * time.Millisecond
	switch mode {
	case "handoff":
		emit(handoff(*endpoint, *prefix, *samples, gap))
	case "resign":
		emit(resign(*endpoint, *prefix, *samples, gap))
	case "cycles":
		emitWith(cycles(*endpoint, *prefix, *contenders, time.Duration(*durationMs)*time.Millisecond, *ready))
	case "leader", "follow":
		session := newSession(*endpoint, *ttl)
		if mode == "follow" {
			fmt.Println("ready")
		}
		must(concurrency.NewElection(session, *prefix).Campaign(context.Background(), mode))
		if mode == "follow" {
			fmt.Println("elected")
			os.Exit(0)
		}
		fmt.Println("leader")
		select {}
	default:
		must(fmt.Errorf("unknown mode %q", mode))
	}
}
