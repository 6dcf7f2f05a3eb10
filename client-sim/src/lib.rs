//! Banter's headless client simulator, as a library: the CLI (`banter-sim`)
//! is a thin layer of argument parsing and formatting over these modules.
//!
//! - [`barks`]: simulated play on a fake clock, driving the bark director,
//!   and the figures that show what a session sounds like.

pub mod barks;
