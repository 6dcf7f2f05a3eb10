//! Voice clips: where a line's recording lives and how long it is.
//!
//! A line's clip is found by convention at `voice/<Speaker>/<Node>.wav`, relative to the content
//! folder ([`voice_clip_path`]). Its length comes from the WAV header ([`wav_duration`]) or from
//! a manifest, a JSON object mapping each clip path to its length in whole milliseconds
//! ([`VoiceManifest`]). docs/CONTENT.md has the writer's version.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::diagnostic::Diagnostic;
use crate::json::{self, Json};

/// Where voice clips live, relative to the content folder.
pub const VOICE_FOLDER: &str = "voice";

/// The file extension of a voice clip.
pub const VOICE_EXTENSION: &str = "wav";

/// Why a voice clip cannot be named.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VoicePathError {
    #[error("the {part} of a voice clip path may not be empty")]
    Empty { part: &'static str },
    #[error(
        "the {part} `{value}` cannot name a voice clip folder or file: it contains `/`, `\\`, \
         `:` or a control character, or is `.` or `..`"
    )]
    Unsafe { part: &'static str, value: String },
}

/// The conventional path of a line's clip, `voice/<speaker>/<node>.wav`, relative to the content
/// folder and always with `/`, as manifest keys are written. `speaker` is the conversation's
/// `Speaker`, `node` the node's name, both as written (case kept, spaces allowed). A name that
/// could step out of the folder (`..`, a separator, a drive colon) is refused.
pub fn voice_clip_path(speaker: &str, node: &str) -> Result<String, VoicePathError> {
    check_path_part("speaker", speaker)?;
    check_path_part("node", node)?;
    Ok(format!("{VOICE_FOLDER}/{speaker}/{node}.{VOICE_EXTENSION}"))
}

/// The path of a line's clip in a locale, `voice/<locale>/<line id>.wav` with the id's `:` as
/// `-` (`voice/ja/line-3f9a0c11d2.wav`): recordings are keyed by line id, so they survive a
/// renamed node or a reordered response, and each locale has its own. The source language's
/// clips may stay at [`voice_clip_path`].
pub fn localized_voice_clip_path(locale: &str, line_id: &str) -> Result<String, VoicePathError> {
    check_path_part("locale", locale)?;
    let file = line_id.replace(':', "-");
    check_path_part("line id", &file)?;
    Ok(format!("{VOICE_FOLDER}/{locale}/{file}.{VOICE_EXTENSION}"))
}

fn check_path_part(part: &'static str, value: &str) -> Result<(), VoicePathError> {
    if value.is_empty() {
        return Err(VoicePathError::Empty { part });
    }
    let unsafe_char = value
        .chars()
        .any(|c| matches!(c, '/' | '\\' | ':') || c.is_control());
    if unsafe_char || value == "." || value == ".." {
        return Err(VoicePathError::Unsafe {
            part,
            value: value.to_owned(),
        });
    }
    Ok(())
}

/// Why a WAV header gives no duration. Offsets are bytes from the start of the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WavError {
    #[error("the file is {len} bytes, shorter than the 12-byte RIFF header")]
    TooShort { len: usize },
    #[error("not a RIFF file: bytes 0..4 are \"{}\", expected \"RIFF\"", .found.escape_ascii())]
    NotRiff { found: [u8; 4] },
    #[error("not a WAVE file: bytes 8..12 are \"{}\", expected \"WAVE\"", .found.escape_ascii())]
    NotWave { found: [u8; 4] },
    #[error("the chunk header at byte {offset} is cut off: the file ends at byte {len}")]
    TruncatedChunkHeader { offset: usize, len: usize },
    #[error(
        "the `fmt ` chunk at byte {offset} is cut off: it needs 16 bytes, the file ends at byte \
         {len}"
    )]
    TruncatedFmt { offset: usize, len: usize },
    #[error("the `fmt ` chunk at byte {offset} declares {size} bytes, fewer than the 16 it needs")]
    FmtTooSmall { offset: usize, size: u32 },
    #[error("no `{chunk}` chunk before the end of the file at byte {len}")]
    MissingChunk { chunk: &'static str, len: usize },
    #[error("the `fmt ` chunk at byte {offset} declares a byte rate of zero")]
    ZeroByteRate { offset: usize },
}

const RIFF_HEADER_LEN: usize = 12;
const CHUNK_HEADER_LEN: usize = 8;
/// Format tag, channels, sample rate, byte rate, block align, bits per sample.
const FMT_MIN_LEN: usize = 16;
/// Where the byte rate sits inside the `fmt ` chunk's body.
const FMT_BYTE_RATE_AT: usize = 8;

fn read_u32_le(bytes: &[u8], at: usize) -> Option<u32> {
    let field: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(u32::from_le_bytes(field))
}

fn read_four_cc(bytes: &[u8], at: usize) -> Option<[u8; 4]> {
    bytes.get(at..at.checked_add(4)?)?.try_into().ok()
}

/// The length of a WAV clip, from its header alone: the `data` chunk's declared size over the
/// `fmt ` chunk's byte rate (bytes per second, whatever the encoding).
///
/// Takes the file's bytes, or just its beginning: the walk over the chunks stops once both
/// chunks are found, so the audio itself is never read and not checked against the declared
/// size. Chunks are found in any order, skipping the ones it does not know (`LIST`, `fact`, ...)
/// with their pad byte; the RIFF size field is not trusted, since many writers leave it wrong.
pub fn wav_duration(bytes: &[u8]) -> Result<Duration, WavError> {
    if bytes.len() < RIFF_HEADER_LEN {
        return Err(WavError::TooShort { len: bytes.len() });
    }
    let riff = read_four_cc(bytes, 0).ok_or(WavError::TooShort { len: bytes.len() })?;
    if &riff != b"RIFF" {
        return Err(WavError::NotRiff { found: riff });
    }
    let wave = read_four_cc(bytes, 8).ok_or(WavError::TooShort { len: bytes.len() })?;
    if &wave != b"WAVE" {
        return Err(WavError::NotWave { found: wave });
    }
    let len = bytes.len();
    let mut byte_rate: Option<u32> = None;
    let mut data_size: Option<u32> = None;
    let mut at = RIFF_HEADER_LEN;
    while byte_rate.is_none() || data_size.is_none() {
        if at >= len {
            let chunk = if byte_rate.is_none() { "fmt " } else { "data" };
            return Err(WavError::MissingChunk { chunk, len });
        }
        let (Some(id), Some(size)) = (read_four_cc(bytes, at), read_u32_le(bytes, at + 4)) else {
            return Err(WavError::TruncatedChunkHeader { offset: at, len });
        };
        let body = at + CHUNK_HEADER_LEN;
        match &id {
            b"fmt " if byte_rate.is_none() => {
                if (size as usize) < FMT_MIN_LEN {
                    return Err(WavError::FmtTooSmall { offset: at, size });
                }
                let rate = read_u32_le(bytes, body + FMT_BYTE_RATE_AT)
                    .filter(|_| body + FMT_MIN_LEN <= len)
                    .ok_or(WavError::TruncatedFmt { offset: at, len })?;
                if rate == 0 {
                    return Err(WavError::ZeroByteRate { offset: at });
                }
                byte_rate = Some(rate);
            }
            b"data" if data_size.is_none() => data_size = Some(size),
            _ => {}
        }
        // Chunks are padded to an even length.
        let padded = u64::from(size) + u64::from(size % 2);
        at = usize::try_from(body as u64 + padded).unwrap_or(usize::MAX);
    }
    let (Some(byte_rate), Some(data_size)) = (byte_rate, data_size) else {
        return Err(WavError::MissingChunk { chunk: "data", len });
    };
    // At most (2^32 - 1) · 10^9 < 2^64: no overflow.
    let nanos = u64::from(data_size) * 1_000_000_000 / u64::from(byte_rate);
    Ok(Duration::from_nanos(nanos))
}

/// Why a voice manifest was refused. Each says which file and, where it applies, which clip.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("{0}")]
    Json(Box<Diagnostic>),
    #[error("{file}: a voice manifest is an object of clip path to milliseconds, found {found}")]
    NotAnObject { file: String, found: &'static str },
    #[error("{file}: clip `{clip}`: expected a whole number of milliseconds, found {found}")]
    BadLength {
        file: String,
        clip: String,
        found: String,
    },
    #[error("{file}: a clip path may not be empty")]
    EmptyClip { file: String },
}

/// Clip lengths written down ahead of time, for games that would rather not open every clip: a
/// JSON object mapping each clip path ([`voice_clip_path`]) to its length in whole milliseconds.
///
/// ```json
/// { "voice/Mara/Nets_Greet.wav": 2350, "voice/Mara/Nets_Accepted.wav": 1800 }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VoiceManifest {
    lengths: BTreeMap<String, Duration>,
}

impl VoiceManifest {
    /// Parses a manifest. `file` names it in errors. A repeated path, a negative, fractional or
    /// non-numeric length and anything but an object are refused.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Self, ManifestError> {
        let tree = json::parse_bytes(file, bytes).map_err(ManifestError::Json)?;
        let Json::Object(entries) = tree else {
            return Err(ManifestError::NotAnObject {
                file: file.to_owned(),
                found: tree.kind(),
            });
        };
        let mut lengths = BTreeMap::new();
        for (clip, value) in entries {
            if clip.is_empty() {
                return Err(ManifestError::EmptyClip {
                    file: file.to_owned(),
                });
            }
            let millis = match &value {
                Json::Number(number) => number.as_u64(),
                _ => None,
            };
            let Some(millis) = millis else {
                let found = match &value {
                    Json::Number(number) => number.to_string(),
                    other => other.kind().to_owned(),
                };
                return Err(ManifestError::BadLength {
                    file: file.to_owned(),
                    clip,
                    found,
                });
            };
            lengths.insert(clip, Duration::from_millis(millis));
        }
        Ok(VoiceManifest { lengths })
    }

    /// The length of the clip at `clip_path`, if the manifest lists it.
    pub fn clip_length(&self, clip_path: &str) -> Option<Duration> {
        self.lengths.get(clip_path).copied()
    }

    /// The length of the clip of `node` spoken by `speaker`, by the path convention.
    pub fn line_clip_length(&self, speaker: &str, node: &str) -> Option<Duration> {
        voice_clip_path(speaker, node)
            .ok()
            .and_then(|path| self.clip_length(&path))
    }

    /// How many clips it lists.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }
}
