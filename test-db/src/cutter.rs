//! [`CommitCutter`]: a TCP proxy in front of PostgreSQL that cuts a connection at its `COMMIT`,
//! the fault that leaves a commit's outcome unknown to the client.
//!
//! sqlx sends `COMMIT` as a simple-protocol query: the frontend message `Q`, its length (11) and
//! `COMMIT\0`. The proxy watches what the client sends for those bytes and, while armed, either
//! forwards them and then closes both sides before any answer comes back (the database commits;
//! the client never hears it) or drops them and closes (the database sees the connection end in
//! an open transaction and rolls it back). Everything else passes through untouched.
//!
//! [`CommitCutter::freeze`] stops all traffic both ways, on open connections and new ones, without
//! closing anything: a database that hangs (a partition, a stuck server) rather than one that
//! refuses.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The frontend message of `COMMIT` as sqlx sends it.
const COMMIT: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";

/// What the proxy does at the next COMMITs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Pass every COMMIT through.
    Never,
    /// Forward the COMMIT, then close before its answer: the transaction commits unheard.
    AfterCommit,
    /// Drop the COMMIT and close: the transaction rolls back.
    BeforeCommit,
}

#[derive(Debug)]
struct Plan {
    cut: Cut,
    /// How many more COMMITs to cut.
    left: usize,
}

/// The proxy. Dropping it stops accepting; connections already open carry on until they end.
#[derive(Debug)]
pub struct CommitCutter {
    addr: SocketAddr,
    plan: Arc<Mutex<Plan>>,
    cuts: Arc<AtomicUsize>,
    frozen: tokio::sync::watch::Sender<bool>,
    accept: tokio::task::JoinHandle<()>,
}

impl CommitCutter {
    /// A proxy on a loopback port in front of `upstream`, passing everything through.
    pub async fn start(upstream: SocketAddr) -> std::io::Result<CommitCutter> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let plan = Arc::new(Mutex::new(Plan {
            cut: Cut::Never,
            left: 0,
        }));
        let cuts = Arc::new(AtomicUsize::new(0));
        let (frozen, _) = tokio::sync::watch::channel(false);
        let accept = tokio::spawn({
            let plan = plan.clone();
            let cuts = cuts.clone();
            let frozen = frozen.clone();
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    let plan = plan.clone();
                    let cuts = cuts.clone();
                    let frozen = frozen.subscribe();
                    tokio::spawn(async move {
                        if let Ok(server) = TcpStream::connect(upstream).await {
                            relay(client, server, plan, cuts, frozen).await;
                        }
                    });
                }
            }
        });
        Ok(CommitCutter {
            addr,
            plan,
            cuts,
            frozen,
            accept,
        })
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Cuts the next `times` COMMITs (on any connection) the way `cut` says.
    pub fn arm(&self, cut: Cut, times: usize) {
        let mut plan = self.plan.lock().unwrap_or_else(|p| p.into_inner());
        *plan = Plan { cut, left: times };
    }

    /// Stops relaying, both ways, on every connection, until [`CommitCutter::thaw`].
    pub fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Relays again.
    pub fn thaw(&self) {
        self.frozen.send_replace(false);
    }

    /// How many COMMITs were cut so far.
    pub fn cuts(&self) -> usize {
        self.cuts.load(Ordering::SeqCst)
    }
}

impl Drop for CommitCutter {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Takes one cut from the plan, if armed.
fn take_cut(plan: &Mutex<Plan>) -> Cut {
    let mut plan = plan.lock().unwrap_or_else(|p| p.into_inner());
    if plan.left == 0 {
        return Cut::Never;
    }
    plan.left -= 1;
    plan.cut
}

/// Waits while the proxy is frozen.
async fn while_frozen(frozen: &mut tokio::sync::watch::Receiver<bool>) {
    let _ = frozen.wait_for(|frozen| !frozen).await;
}

async fn relay(
    client: TcpStream,
    server: TcpStream,
    plan: Arc<Mutex<Plan>>,
    cuts: Arc<AtomicUsize>,
    mut frozen: tokio::sync::watch::Receiver<bool>,
) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let mut answers_frozen = frozen.clone();
    let answers = tokio::spawn(async move {
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            let n = match server_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            while_frozen(&mut answers_frozen).await;
            if client_write.write_all(&buffer[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    });
    let mut buffer = vec![0u8; 16 * 1024];
    // The last bytes of the previous read, so a COMMIT split across two reads is still seen.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match client_read.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        while_frozen(&mut frozen).await;
        let chunk = &buffer[..n];
        let mut seen = std::mem::take(&mut tail);
        let carried = seen.len();
        seen.extend_from_slice(chunk);
        let found = seen
            .windows(COMMIT.len())
            .position(|w| w == COMMIT)
            .filter(|&at| at + COMMIT.len() > carried);
        if let Some(at) = found {
            match take_cut(&plan) {
                Cut::Never => {}
                Cut::AfterCommit => {
                    cuts.fetch_add(1, Ordering::SeqCst);
                    answers.abort();
                    let _ = server_write.write_all(chunk).await;
                    // TCP delivers the COMMIT before the end of the stream: the database runs
                    // it, then finds the connection gone. The client hears nothing back.
                    let _ = server_write.shutdown().await;
                    return;
                }
                Cut::BeforeCommit => {
                    cuts.fetch_add(1, Ordering::SeqCst);
                    answers.abort();
                    // Everything before the COMMIT goes through; the COMMIT never does.
                    let keep = at.saturating_sub(carried).min(chunk.len());
                    let _ = server_write.write_all(&chunk[..keep]).await;
                    let _ = server_write.shutdown().await;
                    return;
                }
            }
        }
        if server_write.write_all(chunk).await.is_err() {
            break;
        }
        let keep_from = seen.len().saturating_sub(COMMIT.len() - 1);
        tail = seen[keep_from..].to_vec();
    }
    let _ = server_write.shutdown().await;
    let _ = answers.await;
}
