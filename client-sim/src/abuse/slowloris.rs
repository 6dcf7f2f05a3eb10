//! Slowloris: TCP connections that send a `GET /v1/ws` upgrade one header line at a time, a
//! line every few seconds, never finishing. The server must close them (a header-read
//! deadline); what it sent before closing, and when, is the figure.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::AbuseOptions;
use super::dial::{Dialer, io_label};
use super::figures::{Samples, Spread, Tally, add, get};
use super::schedule::{paced, ramped};

/// Line `n` (from 0) of a slowloris upgrade request: the request line, the upgrade's real
/// headers, then made-up headers forever. Never the empty line that would end the request.
pub fn slowloris_line(authority: &str, n: u64) -> String {
    match n {
        0 => "GET /v1/ws HTTP/1.1\r\n".to_owned(),
        1 => format!("Host: {authority}\r\n"),
        2 => "Upgrade: websocket\r\n".to_owned(),
        3 => "Connection: Upgrade\r\n".to_owned(),
        4 => "Sec-WebSocket-Version: 13\r\n".to_owned(),
        5 => "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n".to_owned(),
        n => format!("X-Slowloris-{n}: {n}\r\n"),
    }
}

/// The status code of an HTTP response's first bytes (`HTTP/1.1 408 Request Timeout`).
pub fn status_of(head: &[u8]) -> Option<u16> {
    let text = std::str::from_utf8(head.get(..head.len().min(64))?).ok()?;
    let mut words = text.strip_prefix("HTTP/")?.split_whitespace();
    words.next()?;
    let code = words.next()?;
    (code.len() == 3).then(|| code.parse().ok()).flatten()
}

/// What the slowloris connections did and what the server did to them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SlowlorisReport {
    pub connections: usize,
    pub line_interval_s: f64,
    pub connected: u64,
    pub connect_failures: BTreeMap<String, u64>,
    pub header_lines_sent: u64,
    /// Connections the server closed (end of stream, reset, or a failed write).
    pub closed_by_server: u64,
    /// What the server sent before closing: a status code, or `nothing`.
    pub server_answers: BTreeMap<String, u64>,
    /// Seconds from connect to the server's close.
    pub closed_after_s: Spread,
    /// Still open when the run ended (the server never closed them).
    pub open_at_end: u64,
}

/// The slowloris connections' counters while they run.
#[derive(Default)]
pub(super) struct Live {
    connected: AtomicU64,
    pub(super) open: AtomicU64,
    lines: AtomicU64,
    pub(super) closed: AtomicU64,
    connect_failures: Tally,
    answers: Tally,
    closed_after: Samples,
}

async fn connection(
    dialer: Arc<Dialer>,
    i: usize,
    start_at: Instant,
    interval: Duration,
    live: Arc<Live>,
) {
    tokio::time::sleep_until(start_at).await;
    let mut stream = match dialer.tcp(i, None).await {
        Ok(s) => s,
        Err(e) => {
            live.connect_failures.add(io_label(&e));
            return;
        }
    };
    add(&live.connected);
    add(&live.open);
    let connected_at = Instant::now();
    let (mut reader, mut writer) = stream.split();
    let mut tick = paced(interval);
    let mut line = 0u64;
    let mut buf = [0u8; 512];
    let mut answer: Option<String> = None;
    let closed = loop {
        tokio::select! {
            _ = tick.tick() => {
                let text = slowloris_line(&dialer.authority, line);
                if writer.write_all(text.as_bytes()).await.is_err() {
                    break true;
                }
                line += 1;
                add(&live.lines);
            }
            read = reader.read(&mut buf) => match read {
                Ok(0) | Err(_) => break true,
                Ok(n) => {
                    // The first bytes say what the server answered (a 408, a 400, ...); keep
                    // reading until it closes.
                    answer.get_or_insert_with(|| {
                        status_of(&buf[..n]).map_or_else(|| "bytes".to_owned(), |s| s.to_string())
                    });
                }
            },
            () = tokio::time::sleep_until(dialer.deadline) => break false,
        }
    };
    live.open.fetch_sub(1, Ordering::Relaxed);
    if closed {
        add(&live.closed);
        live.closed_after.push(connected_at.elapsed().as_secs_f64());
        live.answers
            .add(answer.unwrap_or_else(|| "nothing".to_owned()));
    }
}

/// Runs `options.slowloris` connections until the deadline.
pub(super) async fn run(
    dialer: Arc<Dialer>,
    options: &AbuseOptions,
    live: Arc<Live>,
) -> SlowlorisReport {
    let n = options.slowloris;
    ramped(n, options.duration, |i, at| {
        connection(
            dialer.clone(),
            i,
            at,
            options.slowloris_interval,
            live.clone(),
        )
    })
    .await;
    SlowlorisReport {
        connections: n,
        line_interval_s: options.slowloris_interval.as_secs_f64(),
        connected: get(&live.connected),
        connect_failures: live.connect_failures.take(),
        header_lines_sent: get(&live.lines),
        closed_by_server: get(&live.closed),
        server_answers: live.answers.take(),
        closed_after_s: live.closed_after.spread(),
        open_at_end: get(&live.connected) - get(&live.closed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slowloris_request_never_ends() {
        let lines: Vec<String> = (0..50)
            .map(|n| slowloris_line("127.0.0.1:7350", n))
            .collect();
        assert_eq!(lines[0], "GET /v1/ws HTTP/1.1\r\n");
        assert_eq!(lines[1], "Host: 127.0.0.1:7350\r\n");
        for line in &lines {
            assert!(line.ends_with("\r\n"), "{line:?}");
            // The empty line would end the header; a header line has a name and a colon.
            assert!(line.len() > 2, "{line:?}");
            assert_eq!(line.matches("\r\n").count(), 1, "{line:?}");
        }
        assert!(lines[1..].iter().all(|l| l.contains(": ")));
    }

    #[test]
    fn statuses_are_read_from_the_first_bytes() {
        assert_eq!(
            status_of(b"HTTP/1.1 408 Request Timeout\r\n\r\n"),
            Some(408)
        );
        assert_eq!(status_of(b"HTTP/1.0 400 Bad Request\r\n"), Some(400));
        assert_eq!(status_of(b"HTTP/1.1 431"), Some(431));
        assert_eq!(status_of(b"HTTP/1.1 40"), None);
        assert_eq!(status_of(b"garbage"), None);
        assert_eq!(status_of(&[0xff, 0xfe]), None);
        assert_eq!(status_of(b""), None);
    }
}
