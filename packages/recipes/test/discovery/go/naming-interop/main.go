// A Go side for service-registry-interop.test.ts, built against etcd's own naming packages
// (clientv3/naming/endpoints and its gRPC resolver) in GOPATH mode:
//
//	naming-interop register <endpoints> <service> <key> <addr> <metadata JSON> <ttl>
//	    AddEndpoint(<service>/<key>) under a kept-alive lease; prints "registered <key> <lease hex>";
//	    on SIGTERM or stdin EOF revokes the lease and prints "deregistered".
//	naming-interop resolve <endpoints> <service>
//	    runs the gRPC resolver for etcd:///<service>; prints every address set it reports, as one
//	    JSON line of [{"Addr":...,"Metadata":...}] sorted by Addr, until SIGTERM or stdin EOF.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/clientv3"
	"go.etcd.io/etcd/clientv3/naming/endpoints"
	"go.etcd.io/etcd/clientv3/naming/resolver"
	gresolver "google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
)

func main() {
	if len(os.Args) < 4 {
		fail(fmt.Errorf("usage: naming-interop register|resolve <endpoints> <service> ..."))
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(os.Args[2], ","),
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		fail(err)
	}
	defer client.Close()
	switch os.Args[1] {
	case "register":
		register(client, os.Args[3:])
	case "resolve":
		resolve(client, os.Args[3])
	default:
		fail(fmt.Errorf("unknown command %q", os.Args[1]))
	}
}

func register(client *clientv3.Client, args []string) {
	if len(args) != 5 {
		fail(fmt.Errorf("register needs <service> <key> <addr> <metadata JSON> <ttl>"))
	}
	service, key, addr := args[0], args[1], args[2]
	var metadata interface{}
	if err := json.Unmarshal([]byte(args[3]), &metadata); err != nil {
		fail(err)
	}
	ttl, err := strconv.ParseInt(args[4], 10, 64)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	lease, err := client.Grant(ctx, ttl)
	if err != nil {
		fail(err)
	}
	keepalive, err := client.KeepAlive(ctx, lease.ID)
	if err != nil {
		fail(err)
	}
	go func() {
		for range keepalive {
		}
	}()
	manager, err := endpoints.NewManager(client, service)
	if err != nil {
		fail(err)
	}
	full := service + "/" + key
	endpoint := endpoints.Endpoint{Addr: addr, Metadata: metadata}
	if err := manager.AddEndpoint(ctx, full, endpoint, clientv3.WithLease(lease.ID)); err != nil {
		fail(err)
	}
	fmt.Printf("registered %s %x\n", full, int64(lease.ID))
	waitForEnd()
	if _, err := client.Revoke(ctx, lease.ID); err != nil {
		fail(err)
	}
	fmt.Println("deregistered")
}

// addressPrinter is the resolver's view of a gRPC ClientConn: it prints each address set.
type addressPrinter struct{}

type printed struct {
	Addr     string
	Metadata interface{}
}

func (addressPrinter) UpdateState(state gresolver.State) {
	list := make([]printed, 0, len(state.Addresses))
	for _, address := range state.Addresses {
		list = append(list, printed{Addr: address.Addr, Metadata: address.Metadata})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Addr < list[j].Addr })
	line, err := json.Marshal(list)
	if err != nil {
		fail(err)
	}
	fmt.Println(string(line))
}
func (addressPrinter) ReportError(err error)                    { fmt.Fprintln(os.Stderr, err) }
func (addressPrinter) NewAddress(addresses []gresolver.Address) {}
func (addressPrinter) NewServiceConfig(config string)           {}
func (addressPrinter) ParseServiceConfig(config string) *serviceconfig.ParseResult {
	return &serviceconfig.ParseResult{}
}

func resolve(client *clientv3.Client, service string) {
	builder, err := resolver.NewBuilder(client)
	if err != nil {
		fail(err)
	}
	target := gresolver.Target{Scheme: "etcd", Endpoint: service}
	r, err := builder.Build(target, addressPrinter{}, gresolver.BuildOptions{})
	if err != nil {
		fail(err)
	}
	fmt.Fprintln(os.Stderr, "resolving", service)
	waitForEnd()
	r.Close()
}

// waitForEnd returns on SIGTERM, SIGINT or the end of stdin.
func waitForEnd() {
	done := make(chan struct{}, 2)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-signals
		done <- struct{}{}
	}()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		done <- struct{}{}
	}()
	<-done
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "naming-interop:", err)
	os.Exit(1)
}
