//! `banter-server`: a thin entry point. Every command lives in the library ([`banter_server::cli`])
//! so it can be tested without spawning a process and so later commands slot in beside it.

use std::process::ExitCode;

use clap::Parser;

/// jemalloc rather than glibc's malloc. After an abuse run (thousands of sessions opened and
/// closed, RELIABILITY.md section 6) glibc kept the freed memory in its per-thread arenas: RSS
/// stayed at 98–204 MiB against a 13 MiB baseline, and fell to 20 MiB only when `malloc_trim` was
/// forced from outside. jemalloc's background thread returns dirty pages to the kernel after its
/// decay time (10 s) even when the server is idle.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = banter_server::cli::Cli::parse();
    // Unlocked handles: `serve` logs from worker threads, and a lock held here for the whole
    // command would block every one of them (and with them, shutdown).
    let status = banter_server::cli::run(cli, &mut std::io::stdout(), &mut std::io::stderr());
    ExitCode::from(status)
}
