//! The text of a line as a client draws it (article section 6.2), in three parts:
//!
//! - **markup** (`text/markup.rs`): which graphemes a rich-text line draws, tags and entities
//!   aside ([`visible_graphemes`], [`visible_units`], [`visible_text`]), and which prefix of its
//!   source shows the first `k` of them ([`prefix`], [`balanced_prefix`]);
//! - **the typewriter** (`text/typewriter.rs`): how fast those graphemes appear and what they
//!   sound like ([`Pacing`], [`BlipVoice`]), and [`Typewriter`], the state machine that types one
//!   line at a time and hands out a new [`Generation`] per line;
//! - **voice clips** (`text/voice.rs`): where a line's recording lives ([`voice_clip_path`]) and
//!   how long it is ([`wav_duration`], [`VoiceManifest`]).
//!
//! A game client and the simulator share this module, so both type a line out identically. It is
//! pure: no clock (time is a [`Duration`](std::time::Duration) since any epoch the caller picks),
//! no random source of its own (a [`rand_core::Rng`] is an argument) and no file reading (the WAV
//! parser and the manifest parser take bytes; the caller reads the file).

mod markup;
mod typewriter;
mod voice;

pub use markup::{
    VisibleUnit, balanced_prefix, prefix, tags, visible_graphemes, visible_text, visible_units,
};
pub use typewriter::{
    BlipVoice, Generation, Pacing, Typewriter, TypewriterEvent, uniform_signed_unit,
};
pub use voice::{
    ManifestError, VOICE_EXTENSION, VOICE_FOLDER, VoiceManifest, VoicePathError, WavError,
    localized_voice_clip_path, voice_clip_path, wav_duration,
};
