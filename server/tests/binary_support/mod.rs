//! How the command tests (`cli.rs`, `gen_content.rs`) run the `banter-server` binary: to its
//! end, in the server crate's folder, its output kept.

use std::process::{Command, Output};

/// Runs the binary with `args` in the server crate's folder, to its end.
pub fn banter(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_banter-server"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run banter-server")
}

/// What a finished run wrote to stderr, as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
