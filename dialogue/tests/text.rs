//! The typewriter's text rules, pacing, voice clips and generations (article section 6.2).
//!
//! Why one file over 600 lines: a list of independent tests of one module, each readable alone.

use std::convert::Infallible;
use std::time::{Duration, Instant};

use banter_dialogue::text::{
    BlipVoice, Generation, ManifestError, Pacing, Typewriter, TypewriterEvent, VoiceManifest,
    VoicePathError, WavError, balanced_prefix, prefix, uniform_signed_unit, visible_graphemes,
    visible_text, visible_units, voice_clip_path, wav_duration,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rand_core::{Rng, TryRng};

/// SplitMix64, so pitches are reproducible from a seed without depending on banter-barks.
struct SplitMix64(u64);

impl TryRng for SplitMix64 {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.next_u64() >> 32) as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Ok(z ^ (z >> 31))
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// Always the same 64 bits: pins `u` to an end of its interval.
struct Constant(u64);

impl TryRng for Constant {
    type Error = Infallible;
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.0 as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.0)
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        dst.fill(self.0 as u8);
        Ok(())
    }
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn graphemes_of(text: &str) -> Vec<String> {
    visible_units(text)
        .into_iter()
        .map(|u| u.grapheme)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Counting.

#[test]
fn the_articles_colored_line_is_28_characters_and_2_graphemes() {
    let line = r##"<font color="#fff">hi</font>"##;
    assert_eq!(line.chars().count(), 28);
    assert_eq!(visible_graphemes(line), 2);
    assert_eq!(visible_text(line), "hi");
}

#[test]
fn tags_draw_nothing() {
    assert_eq!(visible_graphemes("<b>bold</b> <i>it</i>"), 7);
    assert_eq!(visible_graphemes("a<br/>b<br />c"), 3);
    assert_eq!(visible_graphemes("<b></b>"), 0);
    assert_eq!(visible_graphemes(""), 0);
    assert_eq!(
        visible_graphemes(r##"<stroke color="#00A2FF" joins="miter" thickness="2">x</stroke>"##),
        1
    );
    // A quoted value may hold a `>`; an apostrophe outside a value is just a byte of the tag.
    assert_eq!(visible_graphemes(r#"<font face="a>b">x</font>"#), 1);
    assert_eq!(visible_graphemes("<i'm>x"), 1);
    assert_eq!(visible_graphemes("a<!-- a note -->b"), 2);
}

#[test]
fn lone_angle_brackets_are_visible() {
    // No letter after `<`.
    assert_eq!(visible_text("a < b"), "a < b");
    assert_eq!(visible_text("I <3 you"), "I <3 you");
    // No `>` before the end.
    assert_eq!(visible_text("x<y"), "x<y");
    assert_eq!(visible_text("<b"), "<b");
    // Another `<` first: the first one is visible, the second opens a tag.
    assert_eq!(visible_text("<a<b>c"), "<ac");
    // A `>` outside a tag.
    assert_eq!(visible_text("c > d"), "c > d");
    assert_eq!(visible_text("</b>>"), ">");
    // An unclosed value or comment is not a tag.
    assert_eq!(
        visible_text(r#"<font color="red>hi"#),
        r#"<font color="red>hi"#
    );
    assert_eq!(visible_text("<!-- never closed"), "<!-- never closed");
    assert_eq!(visible_graphemes("<"), 1);
    assert_eq!(visible_graphemes(">"), 1);
    assert_eq!(visible_graphemes("</>"), 3);
}

#[test]
fn each_entity_is_one_character() {
    assert_eq!(
        visible_text("&amp;&lt;&gt;&quot;&apos;&nbsp;"),
        "&<>\"'\u{a0}"
    );
    assert_eq!(visible_graphemes("&amp;&lt;&gt;&quot;&apos;&nbsp;"), 6);
    assert_eq!(
        visible_text("it&#39;s it&#x27;s it&#X27;s"),
        "it's it's it's"
    );
    assert_eq!(visible_graphemes("Fish &amp; chips"), 12);
    // Decoded `<b>` is text, never a tag.
    assert_eq!(visible_text("&lt;b&gt;"), "<b>");
    assert_eq!(visible_graphemes("&#128077;"), 1);
}

#[test]
fn malformed_entities_are_literal_text() {
    // Unknown name, missing `;`, wrong case, empty, out of range, surrogate, NUL, too long.
    for (line, drawn) in [
        ("&foo;", "&foo;"),
        ("&amp", "&amp"),
        ("&AMP;", "&AMP;"),
        ("&;", "&;"),
        ("&", "&"),
        ("&#;", "&#;"),
        ("&#x;", "&#x;"),
        ("&#x110000;", "&#x110000;"),
        ("&#xD800;", "&#xD800;"),
        ("&#0;", "&#0;"),
        ("&#00000065;", "&#00000065;"),
        ("&#12a;", "&#12a;"),
        ("&&amp;", "&&"),
    ] {
        assert_eq!(visible_text(line), drawn, "{line}");
        assert_eq!(visible_graphemes(line), drawn.chars().count(), "{line}");
    }
    assert_eq!(visible_text("&#0000065;"), "A");
}

#[test]
fn emoji_are_one_grapheme_each() {
    assert_eq!(visible_graphemes("👍"), 1);
    assert_eq!(visible_graphemes("👨\u{200d}👩\u{200d}👧"), 1);
    assert_eq!(visible_graphemes("🇯🇵"), 1);
    assert_eq!(visible_graphemes("🇯🇵🇫🇷"), 2);
    assert_eq!(visible_graphemes("👍🏽"), 1);
    assert_eq!(visible_graphemes("<b>👍</b> ok 👨‍👩‍👧 🇯🇵"), 8);
    assert_eq!(graphemes_of("a👨‍👩‍👧b"), ["a", "👨‍👩‍👧", "b"]);
}

#[test]
fn a_letter_with_a_combining_accent_is_one_grapheme() {
    assert_eq!(visible_graphemes("e\u{301}"), 1);
    assert_eq!(visible_graphemes("cafe\u{301}"), 4);
    // Clusters are formed on the decoded text, across a tag and from an entity.
    assert_eq!(visible_graphemes("e<b>\u{301}</b>"), 1);
    assert_eq!(visible_graphemes("e&#x301;"), 1);
    assert_eq!(visible_graphemes("&#101;&#769;"), 1);
    assert_eq!(visible_graphemes("\r\n"), 1);
}

#[test]
fn units_map_back_to_their_source() {
    let line = "<b>A&amp;</b>é!";
    let units = visible_units(line);
    let sources: Vec<&str> = units.iter().map(|u| &line[u.source.clone()]).collect();
    assert_eq!(sources, ["A", "&amp;", "é", "!"]);
    let blips: Vec<bool> = units.iter().map(|u| u.blips).collect();
    assert_eq!(blips, [true, false, true, false]);
    // A cluster spanning a tag keeps the tag inside its range.
    let split = visible_units("e<b>\u{301}");
    assert_eq!(split.len(), 1);
    assert_eq!(split[0].source, 0..6);
}

#[test]
fn blips_are_letters_and_digits_only() {
    let blips = |line: &str| -> Vec<bool> { visible_units(line).iter().map(|u| u.blips).collect() };
    assert_eq!(
        blips("a1 ,.!?👍&nbsp;é日"),
        [
            true, true, false, false, false, false, false, false, false, true, true
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Prefixes.

#[test]
fn prefix_keeps_tags_before_and_never_cuts_inside() {
    let line = r##"<font color="#fff">hi</font>"##;
    assert_eq!(prefix(line, 0), "");
    assert_eq!(prefix(line, 1), r##"<font color="#fff">h"##);
    assert_eq!(prefix(line, 2), line);
    assert_eq!(prefix(line, 99), line);
    let entity = "a&amp;b";
    assert_eq!(prefix(entity, 1), "a");
    assert_eq!(prefix(entity, 2), "a&amp;");
    let family = "x👨‍👩‍👧y";
    assert_eq!(prefix(family, 2), "x👨‍👩‍👧");
    assert_eq!(prefix("e\u{301}e\u{301}", 1), "e\u{301}");
    assert_eq!(prefix("<b>hi</b> there", 2), "<b>hi");
    // A line with nothing visible shows whole (its tags) at 0.
    assert_eq!(prefix("<br/>", 0), "<br/>");
}

#[test]
fn balanced_prefix_closes_what_it_opened() {
    assert_eq!(balanced_prefix("<b>hi</b>", 1), "<b>h</b>");
    assert_eq!(
        balanced_prefix(r##"<font color="#fff"><b>hi</b> you</font>"##, 3),
        r##"<font color="#fff"><b>hi</b> </font>"##
    );
    assert_eq!(balanced_prefix("a<br/>b<br>c", 2), "a<br/>b");
    assert_eq!(balanced_prefix("<i>a</b>b", 2), "<i>a</b>b</i>");
    assert_eq!(balanced_prefix("plain", 2), "pl");
}

// ---------------------------------------------------------------------------------------------
// Pacing.

#[test]
fn a_clip_spreads_over_the_visible_graphemes() {
    let clip = Pacing::Voice { clip: ms(1000) };
    let line = r##"<font color="#fff">hi</font>"##;
    let total = visible_graphemes(line);
    // 1000 / 2, not 1000 / 28: the article's bug.
    assert_eq!(clip.interval(total), ms(500));
    assert_eq!(clip.offset(total, total), ms(1000));
    assert_eq!(
        Pacing::Voice { clip: ms(1000) }.interval(3),
        Duration::from_nanos(333_333_333)
    );
    // No rounding drift: the last grapheme lands on the end of the clip.
    assert_eq!(Pacing::Voice { clip: ms(1000) }.offset(3, 3), ms(1000));
    assert_eq!(Pacing::Voice { clip: ms(1000) }.interval(0), Duration::ZERO);
    assert_eq!(
        Pacing::Voice {
            clip: Duration::MAX
        }
        .offset(7, 7),
        Duration::MAX
    );
    let blips = Pacing::Blips(BlipVoice {
        interval: ms(40),
        base_pitch: 1.0,
        pitch_spread: 0.1,
    });
    assert_eq!(blips.interval(10), ms(40));
    assert_eq!(blips.offset(3, 10), ms(120));
    assert_eq!(
        Pacing::new(Some(ms(5)), voice()),
        Pacing::Voice { clip: ms(5) }
    );
    assert_eq!(Pacing::new(None, voice()), Pacing::Blips(voice()));
}

#[test]
fn a_voiced_line_shows_on_the_clip_and_never_blips() {
    let mut typewriter = Typewriter::new();
    let line = r##"<font color="#fff">hi</font>"##;
    let generation = typewriter.start(
        line,
        Pacing::Voice { clip: ms(1000) },
        ms(10_000),
        &mut SplitMix64(1),
    );
    let mut timeline = Vec::new();
    for now in (10_000..=11_100).step_by(50).map(ms) {
        while let Some(event) = typewriter.poll(now) {
            timeline.push((now, event));
        }
    }
    let shows: Vec<(Duration, usize)> = timeline
        .iter()
        .filter_map(|(at, e)| match e {
            TypewriterEvent::Show { visible, .. } => Some((*at, *visible)),
            _ => None,
        })
        .collect();
    assert_eq!(shows, [(ms(10_000), 0), (ms(10_500), 1), (ms(11_000), 2)]);
    assert!(
        !timeline
            .iter()
            .any(|(_, e)| matches!(e, TypewriterEvent::Blip { .. }))
    );
    assert_eq!(
        timeline.last(),
        Some(&(ms(11_000), TypewriterEvent::Completed { generation }))
    );
    let TypewriterEvent::Show { text_prefix, .. } = &timeline[1].1 else {
        panic!("expected a show");
    };
    assert_eq!(text_prefix, r##"<font color="#fff">h"##);
}

fn voice() -> BlipVoice {
    BlipVoice {
        interval: ms(30),
        base_pitch: 1.0,
        pitch_spread: 0.25,
    }
}

fn drain(typewriter: &mut Typewriter, now: Duration) -> Vec<TypewriterEvent> {
    std::iter::from_fn(|| typewriter.poll(now)).collect()
}

fn blip_pitches(events: &[TypewriterEvent]) -> Vec<f64> {
    events
        .iter()
        .filter_map(|e| match e {
            TypewriterEvent::Blip { pitch, .. } => Some(*pitch),
            _ => None,
        })
        .collect()
}

#[test]
fn blips_follow_each_letter_with_a_seeded_pitch() {
    let line = "Hi, <b>you</b>!";
    let mut typewriter = Typewriter::new();
    let generation = typewriter.start(line, Pacing::Blips(voice()), ms(0), &mut SplitMix64(42));
    let events = drain(&mut typewriter, ms(1_000));
    // One Show per count 0..=8, one Blip right after each letter, then Completed.
    let kinds: String = events
        .iter()
        .map(|e| match e {
            TypewriterEvent::Show { .. } => 'S',
            TypewriterEvent::Blip { .. } => 'b',
            TypewriterEvent::Completed { .. } => 'C',
        })
        .collect();
    assert_eq!(kinds, "SSbSbSSSbSbSbSC");
    assert!(events.iter().all(|e| e.generation() == generation));
    let pitches = blip_pitches(&events);
    assert_eq!(pitches.len(), 5);
    assert!(
        pitches.iter().all(|p| (0.75..=1.25).contains(p)),
        "{pitches:?}"
    );
    // The same seed replays the same pitches; they are p0 + u·δ with the seed's draws.
    let mut replay = SplitMix64(42);
    let expected: Vec<f64> = (0..5).map(|_| voice().draw_pitch(&mut replay)).collect();
    assert_eq!(pitches, expected);
    let mut other = Typewriter::new();
    other.start(line, Pacing::Blips(voice()), ms(0), &mut SplitMix64(42));
    assert_eq!(blip_pitches(&drain(&mut other, ms(1_000))), pitches);
}

#[test]
fn blips_arrive_on_the_interval() {
    let mut typewriter = Typewriter::new();
    typewriter.start("ab", Pacing::Blips(voice()), ms(100), &mut SplitMix64(0));
    assert_eq!(typewriter.next_deadline(), Some(ms(100)));
    assert_eq!(drain(&mut typewriter, ms(99)), []);
    assert_eq!(drain(&mut typewriter, ms(100)).len(), 1); // Show 0
    assert_eq!(typewriter.next_deadline(), Some(ms(130)));
    assert_eq!(drain(&mut typewriter, ms(129)), []);
    assert_eq!(drain(&mut typewriter, ms(130)).len(), 2); // Show 1, Blip
    assert_eq!(typewriter.visible(), 1);
    let last = drain(&mut typewriter, ms(160));
    assert_eq!(last.len(), 3); // Show 2, Blip, Completed
    assert_eq!(typewriter.next_deadline(), None);
    assert!(!typewriter.is_typing());
}

#[test]
fn pitch_is_p0_plus_u_delta_over_the_closed_interval() {
    let v = voice();
    assert_eq!(v.pitch(-1.0), 0.75);
    assert_eq!(v.pitch(1.0), 1.25);
    assert_eq!(uniform_signed_unit(&mut Constant(0)), -1.0);
    assert_eq!(uniform_signed_unit(&mut Constant(u64::MAX)), 1.0);
    let mut rng = SplitMix64(7);
    let draws: Vec<f64> = (0..10_000).map(|_| uniform_signed_unit(&mut rng)).collect();
    assert!(draws.iter().all(|u| (-1.0..=1.0).contains(u)));
    let mean = draws.iter().sum::<f64>() / draws.len() as f64;
    assert!(mean.abs() < 0.05, "{mean}");
    assert!(draws.iter().any(|u| *u < -0.9) && draws.iter().any(|u| *u > 0.9));
}

// ---------------------------------------------------------------------------------------------
// Generations.

#[test]
fn a_superseded_line_emits_nothing_more_and_never_completes() {
    let mut typewriter = Typewriter::new();
    let old = typewriter.start(
        "This line is long and gets interrupted.",
        Pacing::Blips(voice()),
        ms(0),
        &mut SplitMix64(3),
    );
    let early = drain(&mut typewriter, ms(100));
    assert!(!early.is_empty());
    assert!(early.iter().all(|e| e.generation() == old));
    assert!(typewriter.is_typing());

    let new = typewriter.start("Hi.", Pacing::Blips(voice()), ms(100), &mut SplitMix64(3));
    assert!(new > old);
    assert!(!typewriter.is_current(old));
    // Long after both would have finished: only the new line speaks, and completes once.
    let later = drain(&mut typewriter, ms(60_000));
    assert!(later.iter().all(|e| e.generation() == new), "{later:?}");
    assert_eq!(
        later
            .iter()
            .filter(|e| matches!(e, TypewriterEvent::Completed { .. }))
            .count(),
        1
    );
    assert!(matches!(
        later.first(),
        Some(TypewriterEvent::Show { visible: 0, .. })
    ));
    assert_eq!(drain(&mut typewriter, ms(120_000)), []);
    // A click meant for the old line does nothing.
    assert!(!typewriter.skip(old));
}

#[test]
fn completed_fires_exactly_once_per_generation() {
    let mut typewriter = Typewriter::new();
    assert_eq!(typewriter.generation(), Generation::default());
    let mut completions = Vec::new();
    let mut rng = SplitMix64(9);
    for (i, line) in ["One.", "<b>Two</b>", "", "Three &amp; four"]
        .iter()
        .enumerate()
    {
        let start = ms(i as u64 * 10_000);
        typewriter.start(line, Pacing::Blips(voice()), start, &mut rng);
        for step in 0..200 {
            for event in drain(&mut typewriter, start + ms(step * 25)) {
                if let TypewriterEvent::Completed { generation } = event {
                    completions.push(generation);
                }
            }
        }
    }
    assert_eq!(
        completions.iter().map(|g| g.get()).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
}

#[test]
fn skip_shows_the_whole_line_then_completes_once() {
    let line = "<b>Click</b> through";
    let mut typewriter = Typewriter::new();
    let generation = typewriter.start(line, Pacing::Blips(voice()), ms(0), &mut SplitMix64(5));
    let _ = drain(&mut typewriter, ms(45)); // Show 0, Show 1, Blip
    assert_eq!(typewriter.visible(), 1);
    assert!(typewriter.skip(generation));
    let rest = drain(&mut typewriter, ms(46));
    assert_eq!(
        rest,
        [
            TypewriterEvent::Show {
                generation,
                visible: 13,
                text_prefix: line.to_owned(),
            },
            TypewriterEvent::Completed { generation },
        ]
    );
    assert!(!typewriter.skip(generation), "already completed");
    assert_eq!(drain(&mut typewriter, ms(10_000)), []);
}

#[test]
fn skip_before_the_first_poll_still_completes_once() {
    let mut typewriter = Typewriter::new();
    let generation = typewriter.start(
        "ab",
        Pacing::Voice { clip: ms(900) },
        ms(0),
        &mut Constant(0),
    );
    assert!(typewriter.skip(generation));
    assert_eq!(typewriter.next_deadline(), Some(ms(0)));
    let events = drain(&mut typewriter, ms(0));
    assert_eq!(events.len(), 2);
    assert!(matches!(
        events[0],
        TypewriterEvent::Show { visible: 2, .. }
    ));
    assert_eq!(events[1], TypewriterEvent::Completed { generation });
}

#[test]
fn cancel_drops_the_line_without_completing() {
    let mut typewriter = Typewriter::new();
    let generation = typewriter.start("Bye now.", Pacing::Blips(voice()), ms(0), &mut Constant(1));
    let _ = drain(&mut typewriter, ms(50));
    typewriter.cancel();
    assert_eq!(drain(&mut typewriter, ms(60_000)), []);
    assert!(!typewriter.skip(generation));
    assert!(!typewriter.is_current(generation));
    assert_eq!(typewriter.visible(), 0);
    assert_eq!(typewriter.next_deadline(), None);
}

#[test]
fn an_empty_line_clears_the_label_and_completes() {
    let mut typewriter = Typewriter::new();
    let generation = typewriter.start("<br/>", Pacing::Blips(voice()), ms(5), &mut Constant(0));
    assert_eq!(
        drain(&mut typewriter, ms(5)),
        [
            TypewriterEvent::Show {
                generation,
                visible: 0,
                text_prefix: "<br/>".to_owned(),
            },
            TypewriterEvent::Completed { generation },
        ]
    );
    assert_eq!(Typewriter::new().poll(ms(0)), None);
}

#[test]
fn time_going_backwards_or_overflowing_never_panics() {
    let mut typewriter = Typewriter::new();
    let slow = BlipVoice {
        interval: Duration::MAX,
        ..voice()
    };
    typewriter.start("abc", Pacing::Blips(slow), Duration::MAX, &mut Constant(0));
    let events = drain(&mut typewriter, Duration::MAX);
    assert!(!events.is_empty());
    typewriter.start("abc", Pacing::Blips(voice()), ms(1_000), &mut Constant(0));
    assert_eq!(drain(&mut typewriter, ms(0)), []);
}

// ---------------------------------------------------------------------------------------------
// Voice clips.

#[test]
fn clip_paths_follow_the_convention() {
    assert_eq!(
        voice_clip_path("Mara", "Nets_Greet"),
        Ok("voice/Mara/Nets_Greet.wav".to_owned())
    );
    assert_eq!(
        voice_clip_path("Grandpa Fennick", "Hello"),
        Ok("voice/Grandpa Fennick/Hello.wav".to_owned())
    );
    assert_eq!(
        voice_clip_path("", "Hello"),
        Err(VoicePathError::Empty { part: "speaker" })
    );
    for (speaker, node) in [
        ("..", "x"),
        ("a/b", "x"),
        ("a", "..\\x"),
        ("a", "C:x"),
        ("a", "x\n"),
    ] {
        assert!(
            matches!(
                voice_clip_path(speaker, node),
                Err(VoicePathError::Unsafe { .. })
            ),
            "{speaker:?} {node:?}"
        );
    }
}

/// A canonical WAV header: RIFF, WAVE, optional extra chunk, `fmt ` (16 bytes), `data`.
fn wav(byte_rate: u32, data_size: u32, extra_before_fmt: Option<&[u8]>) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"RIFF");
    bytes.extend_from_slice(&0u32.to_le_bytes()); // left wrong on purpose: not trusted
    bytes.extend_from_slice(b"WAVE");
    if let Some(extra) = extra_before_fmt {
        bytes.extend_from_slice(b"LIST");
        bytes.extend_from_slice(&(extra.len() as u32).to_le_bytes());
        bytes.extend_from_slice(extra);
        if extra.len() % 2 == 1 {
            bytes.push(0);
        }
    }
    bytes.extend_from_slice(b"fmt ");
    bytes.extend_from_slice(&16u32.to_le_bytes());
    bytes.extend_from_slice(&1u16.to_le_bytes()); // PCM
    bytes.extend_from_slice(&1u16.to_le_bytes()); // mono
    bytes.extend_from_slice(&(byte_rate / 2).to_le_bytes()); // sample rate, 16-bit
    bytes.extend_from_slice(&byte_rate.to_le_bytes());
    bytes.extend_from_slice(&2u16.to_le_bytes());
    bytes.extend_from_slice(&16u16.to_le_bytes());
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&data_size.to_le_bytes());
    bytes
}

#[test]
fn wav_duration_is_data_size_over_byte_rate() {
    // 44.1 kHz mono 16-bit: 88,200 bytes a second; 2.5 s of audio.
    assert_eq!(wav_duration(&wav(88_200, 220_500, None)), Ok(ms(2_500)));
    // An odd-sized chunk before `fmt ` is skipped with its pad byte.
    assert_eq!(
        wav_duration(&wav(8_000, 4_000, Some(b"INFOx"))),
        Ok(ms(500))
    );
    // The header alone is enough; audio after it is not needed.
    let mut with_audio = wav(8_000, 8, None);
    with_audio.extend_from_slice(&[0; 8]);
    assert_eq!(wav_duration(&with_audio), Ok(ms(1)));
    // Largest sizes do not overflow.
    assert_eq!(
        wav_duration(&wav(1, u32::MAX, None)),
        Ok(Duration::from_secs(u64::from(u32::MAX)))
    );
}

#[test]
fn wav_data_before_fmt_is_found() {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"RIFF\0\0\0\0WAVE");
    bytes.extend_from_slice(b"data");
    bytes.extend_from_slice(&4u32.to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&wav(4, 0, None)[12..36]); // the `fmt ` chunk alone
    assert_eq!(wav_duration(&bytes), Ok(ms(1_000)));
}

#[test]
fn malformed_wav_headers_are_typed_errors() {
    let good = wav(88_200, 88_200, None);
    assert_eq!(wav_duration(&[]), Err(WavError::TooShort { len: 0 }));
    assert_eq!(
        wav_duration(&good[..11]),
        Err(WavError::TooShort { len: 11 })
    );
    let mut riff = good.clone();
    riff[..4].copy_from_slice(b"RIFX");
    assert_eq!(
        wav_duration(&riff),
        Err(WavError::NotRiff { found: *b"RIFX" })
    );
    let mut wave = good.clone();
    wave[8..12].copy_from_slice(b"AVI ");
    assert_eq!(
        wav_duration(&wave),
        Err(WavError::NotWave { found: *b"AVI " })
    );
    assert_eq!(
        wav_duration(&good[..12]),
        Err(WavError::MissingChunk {
            chunk: "fmt ",
            len: 12
        })
    );
    assert_eq!(
        wav_duration(&good[..15]),
        Err(WavError::TruncatedChunkHeader {
            offset: 12,
            len: 15
        })
    );
    assert_eq!(
        wav_duration(&good[..30]),
        Err(WavError::TruncatedFmt {
            offset: 12,
            len: 30
        })
    );
    assert_eq!(
        wav_duration(&good[..36]),
        Err(WavError::MissingChunk {
            chunk: "data",
            len: 36
        })
    );
    assert_eq!(
        wav_duration(&good[..40]),
        Err(WavError::TruncatedChunkHeader {
            offset: 36,
            len: 40
        })
    );
    assert_eq!(
        wav_duration(&wav(0, 100, None)),
        Err(WavError::ZeroByteRate { offset: 12 })
    );
    let mut small = good.clone();
    small[16..20].copy_from_slice(&8u32.to_le_bytes());
    assert_eq!(
        wav_duration(&small),
        Err(WavError::FmtTooSmall {
            offset: 12,
            size: 8
        })
    );
    // A chunk claiming to run past the end leaves the others missing, no panic.
    let mut huge = Vec::from(&good[..12]);
    huge.extend_from_slice(b"JUNK");
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        wav_duration(&huge),
        Err(WavError::MissingChunk { .. })
    ));
    // Errors say what and where.
    assert_eq!(
        WavError::ZeroByteRate { offset: 12 }.to_string(),
        "the `fmt ` chunk at byte 12 declares a byte rate of zero"
    );
    assert_eq!(
        WavError::NotRiff { found: *b"RI\0X" }.to_string(),
        "not a RIFF file: bytes 0..4 are \"RI\\x00X\", expected \"RIFF\""
    );
}

#[test]
fn a_manifest_maps_clip_paths_to_milliseconds() {
    let manifest = VoiceManifest::parse(
        "content/voice/manifest.json",
        br#"{ "voice/Mara/Nets_Greet.wav": 2350, "voice/Mara/Nets_Accepted.wav": 0 }"#,
    )
    .expect("a valid manifest");
    assert_eq!(manifest.len(), 2);
    assert_eq!(
        manifest.clip_length("voice/Mara/Nets_Greet.wav"),
        Some(ms(2_350))
    );
    assert_eq!(
        manifest.line_clip_length("Mara", "Nets_Accepted"),
        Some(ms(0))
    );
    assert_eq!(manifest.line_clip_length("Mara", "Nets_Declined"), None);
    assert_eq!(manifest.line_clip_length("..", "x"), None);
}

#[test]
fn a_bad_manifest_says_which_file_and_clip() {
    let file = "voice/manifest.json";
    let err = |bytes: &[u8]| VoiceManifest::parse(file, bytes).expect_err("refused");
    assert!(matches!(
        err(b"[]"),
        ManifestError::NotAnObject {
            found: "an array",
            ..
        }
    ));
    assert!(matches!(err(b""), ManifestError::Json(_)));
    assert!(matches!(
        err(br#"{"a": 1, "a": 2}"#),
        ManifestError::Json(_)
    ));
    assert!(matches!(
        err(br#"{"": 1}"#),
        ManifestError::EmptyClip { .. }
    ));
    for (bytes, found) in [
        (&br#"{"voice/A/B.wav": -5}"#[..], "-5"),
        (br#"{"voice/A/B.wav": 1.5}"#, "1.5"),
        (br#"{"voice/A/B.wav": "1500"}"#, "a string"),
    ] {
        assert_eq!(
            err(bytes),
            ManifestError::BadLength {
                file: file.to_owned(),
                clip: "voice/A/B.wav".to_owned(),
                found: found.to_owned(),
            }
        );
    }
    assert_eq!(
        err(br#"{"voice/A/B.wav": null}"#).to_string(),
        "voice/manifest.json: clip `voice/A/B.wav`: expected a whole number of milliseconds, \
         found null"
    );
}

// ---------------------------------------------------------------------------------------------
// Robustness.

#[test]
fn adversarial_markup_stays_fast() {
    // Unclosed comments, values and tags by the hundred thousand: linear, not quadratic.
    for unit in ["<!--", "<a=\"", "<a='", "<a ", "&#x1", "<a b=\"<c d='"] {
        let line = unit.repeat(100_000);
        let started = Instant::now();
        let count = visible_graphemes(&line);
        assert!(count > 0);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{unit:?} took {:?}",
            started.elapsed()
        );
    }
}

/// Any characters at all, up to `max` of them (short, so every prefix can be checked).
fn arbitrary_text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..max).prop_map(String::from_iter)
}

/// Strings built from the fragments that matter, so tags and entities actually occur.
fn markup() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        prop::sample::select(vec![
            "<b>",
            "</b>",
            "<font color=\"#fff\">",
            "</font>",
            "<br/>",
            "<",
            ">",
            "/",
            "=",
            "\"",
            "'",
            "<!--",
            "-->",
            "&",
            "&amp;",
            "&lt;",
            "&nbsp;",
            "&#",
            "&#x",
            "27",
            ";",
            "&#39;",
            "e",
            "\u{301}",
            "👍",
            "\u{200d}",
            "👨",
            "🇯",
            "🇵",
            " ",
            "\n",
            "\r",
            "a",
            "日",
        ])
        .prop_map(str::to_owned),
        arbitrary_text(8),
    ];
    prop::collection::vec(fragment, 0..24).prop_map(|parts| parts.concat())
}

fn check_prefixes(text: &str) -> Result<(), TestCaseError> {
    let total = visible_graphemes(text);
    let units = visible_units(text);
    prop_assert_eq!(units.len(), total);
    // The full prefix is the whole line and draws everything.
    prop_assert_eq!(prefix(text, total), text);
    prop_assert_eq!(visible_text(prefix(text, total)), visible_text(text));
    let mut last_len = 0;
    for k in 0..=total + 1 {
        let shown = prefix(text, k);
        prop_assert!(text.starts_with(shown));
        prop_assert!(shown.len() >= last_len, "prefix {} shrank", k);
        last_len = shown.len();
        // Exactly the first k graphemes, the same ones.
        let expected = k.min(total);
        prop_assert_eq!(
            visible_graphemes(shown),
            expected,
            "k = {}, prefix {:?}",
            k,
            shown
        );
        let drawn: String = units[..expected]
            .iter()
            .map(|u| u.grapheme.as_str())
            .collect();
        prop_assert_eq!(visible_text(shown), drawn);
        let _ = balanced_prefix(text, k);
    }
    Ok(())
}

#[test]
fn prefixes_cover_the_visible_text_and_grow_monotonically() {
    let mut runner = TestRunner::new(Config {
        cases: 10_000,
        ..Config::default()
    });
    runner
        .run(&markup(), |text| check_prefixes(&text))
        .expect("markup prefixes");
    runner
        .run(&arbitrary_text(64), |text| check_prefixes(&text))
        .expect("arbitrary prefixes");
}

#[test]
fn the_typewriter_never_panics_and_completes_once() {
    let mut runner = TestRunner::new(Config {
        cases: 2_000,
        ..Config::default()
    });
    runner
        .run(
            &(markup(), any::<bool>(), 0u64..5_000, any::<u64>()),
            |(text, voiced, clip_ms, seed)| {
                let mut typewriter = Typewriter::new();
                let pacing = Pacing::new(voiced.then(|| ms(clip_ms)), voice());
                let generation = typewriter.start(&text, pacing, ms(0), &mut SplitMix64(seed));
                let total = visible_graphemes(&text);
                let mut events = Vec::new();
                let mut now = ms(0);
                while let Some(deadline) = typewriter.next_deadline() {
                    now = now.max(deadline);
                    events.extend(drain(&mut typewriter, now));
                    prop_assert!(events.len() <= 2 * total + 3);
                }
                let shows: Vec<usize> = events
                    .iter()
                    .filter_map(|e| match e {
                        TypewriterEvent::Show { visible, .. } => Some(*visible),
                        _ => None,
                    })
                    .collect();
                prop_assert_eq!(shows, (0..=total).collect::<Vec<_>>());
                prop_assert_eq!(
                    events.last(),
                    Some(&TypewriterEvent::Completed { generation })
                );
                let blips = blip_pitches(&events).len();
                let letters = if voiced {
                    0
                } else {
                    visible_units(&text).iter().filter(|u| u.blips).count()
                };
                prop_assert_eq!(blips, letters);
                prop_assert!(now <= ms(clip_ms).max(ms(30) * total as u32));
                Ok(())
            },
        )
        .expect("typewriter properties");
}
