#!/usr/bin/env python3
"""Splits two flat perf profiles of the server (the echo phase and the step phase of one
`banter-sim bench` run) into stages, in microseconds of server CPU per message: each sampled
symbol goes to the first stage whose pattern its name matches, and its share of the samples is
multiplied by the phase's CPU per message (BENCHMARKS.md, issue 37).

    perf record -F 999 -o echo.data -p <server> -- sleep 10     # during the echo phase
    perf record -F 999 -o step.data -p <server> -- sleep 10     # during the step phase
    perf report -i echo.data --no-children --sort symbol --stdio > echo.txt  (and step.txt)
    scripts/perf-stages.py echo.txt <echo µs/msg> step.txt <step µs/msg> [--other]

Sampled and matched by name, so read it to about 0.05 µs. `--other` lists the step's symbols
no stage matched.
"""
import re
import sys

rules=[
 ("walk (banter_dialogue)", r"banter_dialogue::"),
 ("audit trail (Trail::push, formatting, SQLite writes)", r"audit::|Trail|sqlite|wal[A-Z]|pager|btree|Vdbe|vdbe|core::fmt|Display>::fmt|pwrite|ext4|jbd2|mark_buffer_dirty|block_commit_write|_rjem_je_arena_ralloc|do_rallocx|rallocx|folio|filemap|generic_perform_write|copy_folio"),
 ("frame parse (tungstenite read, decode, frame checks)", r"poll_next|tungstenite::protocol::frame|read_frame|FrameCheck|ClientMessage|de::|Deserializ|visit_map|parse_str|SliceRead|StrRead|from_str|from_slice|utf8|Utf8|mask"),
 ("analytics tally", r"analytics::"),
 ("session core (handle, command, checks)", r"session::core|SessionCore|session::commands|refusal|quests::|session::"),
 ("answer encoding (serde_json)", r"ser::|Serialize|format_escaped|ServerMessage|itoa"),
 ("metrics (prometheus)", r"prometheus|metrics::"),
 ("clock reads", r"clock_gettime|read_tsc|Timespec|ktime"),
 ("wake-ups, task switches, select (tokio, kernel scheduler)", r"tokio::sync|notify|Notif|waker|Waker|tokio::runtime|finish_task_switch|schedule|futex|epoll|ep_|select|cancellation|is_cancelled|ControlQueue|try_recv|wake|PollFn|poll_fn|Interval|Sleep|timer|__schedule|pick_next|dequeue|enqueue|update_curr|irqrestore|_raw_spin|swapgs|syscall_return|entry_SYSCALL|do_syscall"),
 ("socket write (tungstenite write, tcp send)", r"start_send|buffer_frame|write_pending|tcp_sendmsg|sendto|sock_sendmsg|__tcp_push|tcp_write|ip_|__dev|loopback|netif|net_rx|napi|skb_|tcp_v4|tcp_rcv|tcp_ack|tcp_data|tcp_transmit|tcp_clean|softirq|__tcp|tcp_queue|validate_xmit|dev_hard|__netif|process_backlog|__kfree_skb|kmem_cache|__alloc_skb|kmalloc|sock_def|sk_"),
 ("socket read (tcp receive, copies to user)", r"tcp_recvmsg|recvfrom|sock_recvmsg|__skb_datagram_iter|_copy_to_iter|sock_rfree|skb_attempt_defer|skb_defer_free|skb_release|check_object_size|__check|copy_to_user|tcp_poll|fdget|sock_poll"),
 ("allocation and copies", r"malloc|free|sdallocx|_rjem|memmove|memcpy|memcmp|bytes::|BytesMut|shared_drop|Vec|RawVec|alloc::"),
]
def load(path):
    out={}
    for line in open(path):
        m=re.match(r"\s*([\d.]+)%\s+\[(.)\]\s+(.*)",line)
        if not m: continue
        out[m.group(3).strip()]=out.get(m.group(3).strip(),0)+float(m.group(1))
    return out
def cat(sym):
    for name,rx in rules:
        if re.search(rx,sym): return name
    return "other"
res={}
for path,us in [(sys.argv[1],float(sys.argv[2])),(sys.argv[3],float(sys.argv[4]))]:
    d=load(path); tot=sum(d.values()); c={}
    for s,p in d.items(): c[cat(s)]=c.get(cat(s),0)+p/tot*us
    res[path]=c
names=[r[0] for r in rules]+["other"]
a,b=sys.argv[1],sys.argv[3]
print("| stage | echo µs/msg | step µs/msg | step − echo |\n|---|---|---|---|")
for n in names:
    x=res[a].get(n,0);y=res[b].get(n,0)
    print(f"| {n} | {x:.2f} | {y:.2f} | {y-x:+.2f} |")
print(f"| total | {sum(res[a].values()):.2f} | {sum(res[b].values()):.2f} | {sum(res[b].values())-sum(res[a].values()):+.2f} |")
if "--other" in sys.argv[5:]:
    d=load(b)
    for s,p in sorted(d.items(),key=lambda x:-x[1]):
        if cat(s)=="other": print(p,s[:100])
