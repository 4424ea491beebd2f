package main

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"testing"
)

// fakeRedis answers each RESP command with replies[command name].
func fakeRedis(t *testing.T, replies map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
			var args []string
			for range n {
				r.ReadString('\n') // $len
				arg, _ := r.ReadString('\n')
				args = append(args, strings.TrimSpace(arg))
			}
			conn.Write([]byte(replies[strings.Join(args, " ")]))
		}
	}()
	return ln.Addr().String()
}

func TestRESP(t *testing.T) {
	info := "# Memory\r\nused_memory:123456\r\nused_memory_human:120.56K\r\n"
	addr := fakeRedis(t, map[string]string{
		"PING":        "+PONG\r\n",
		"DBSIZE":      ":42\r\n",
		"INFO memory": "$" + strconv.Itoa(len(info)) + "\r\n" + info + "\r\n",
		"BAD":         "-ERR unknown command 'BAD'\r\n",
	})
	c, err := dialRESP(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if got, err := c.do("PING"); err != nil || got != "PONG" {
		t.Errorf("PING = %q, %v", got, err)
	}
	if _, err := c.do("BAD"); err == nil || !strings.Contains(err.Error(), "unknown command") {
		t.Errorf("BAD: error %v, want the server's", err)
	}
	s, err := c.sample()
	if err != nil || s.usedMemory != 123456 || s.keys != 42 {
		t.Errorf("sample = %+v, %v; want used_memory 123456, 42 keys", s, err)
	}
	if _, err := c.infoField("memory", "no_such_field"); err == nil {
		t.Error("a missing INFO field gave no error")
	}
}

func TestKeepsAnyCase(t *testing.T) {
	cfg := config{only: "proxy, redis"}
	for name, want := range map[string]bool{nameA2ARedis: true, nameProxy: true, nameA2A10: false, nameDirect: false} {
		if got := cfg.keeps(name); got != want {
			t.Errorf("-only %q keeps %q = %v, want %v", cfg.only, name, got, want)
		}
	}
}
