//! Every line in every language: locales, string tables, their checks, and localized
//! conversations.
//!
//! A translation carries text, never structure. [`localize`] replaces the `Text` of each line and
//! response, and the `Disabled` reason of each greyed-out response, that has a translation and
//! changes nothing else, so a conversation walked in any locale has the same nodes, exits,
//! conditions, actions and payloads as the source: the server's authority never depends on the
//! language (it walks the source graph), and a translator cannot break a walk.
//!
//! - **Locales** are BCP 47 tags ([`Locale`]). A player's text comes from the first table of its
//!   fallback chain that has the line (`pt-BR`, then `pt`, then the source).
//! - **String tables** are gettext PO files in `content/locales/<tag>.po` ([`table`]), read and
//!   written with the `polib` crate. Each entry is keyed by its line id (`msgctxt`).
//! - **Checks** ([`check`]): coverage, stale entries, rich-text tags and `{placeholders}` that
//!   differ from the source, text over its length limit, unknown ids.
//! - **Pseudo-localization** ([`pseudo`]): the built-in locale [`PSEUDO`], generated from the
//!   source, served like any other.

pub mod check;
pub mod table;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use crate::model::{Conversation, Exit};

pub use table::{Entry, StringTable, TableError};

/// The built-in pseudo-locale: every line accented, about 40% longer and bracketed (the tag
/// Android uses for the same purpose).
pub const PSEUDO: &str = "en-XA";

/// The folder of a content folder holding the locales.
pub const FOLDER: &str = "locales";

/// The settings file in [`FOLDER`].
pub const SETTINGS_FILE: &str = "locales.json";

/// A BCP 47 language tag (RFC 5646), as a client states it: `ja`, `pt-BR`, `zh-Hant-TW`,
/// `en-XA-u-nu-latn`. Normalized to the RFC's case conventions, compared as normalized.
///
/// Accepted: the `langtag` production of RFC 5646, well-formed, with `-` as the only separator:
/// a language (2 or 3 letters, optionally followed by up to three 3-letter extended language
/// subtags; the 4- to 8-letter languages the RFC reserves for future registration are refused,
/// no language has one), then optionally a script (4 letters), a region (2 letters or 3
/// digits), variants (5 to 8 letters or digits, or a digit then 3 letters or digits; none
/// repeated), extensions (a singleton other than `x`, then subtags of 2 to 8 letters or digits;
/// no singleton repeated) and a private-use part (`x`, then subtags of 1 to 8 letters or
/// digits). At most [`Locale::MAX_LEN`] bytes. Refused: anything else, among them underscores
/// (`pt_BR`), a repeated region (`en-US-GB`), empty subtags, non-ASCII, and the RFC's
/// grandfathered and private-use-only tags (`i-klingon`, `x-whatever`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Locale(String);

/// A locale tag that is not BCP 47.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a BCP 47 language tag (a language such as `ja`, then optional subtags such as `-BR`, separated by `-`)"
)]
pub struct BadLocale(pub String);

impl Locale {
    /// The longest tag accepted; real tags are far shorter.
    pub const MAX_LEN: usize = 64;

    /// Parses a tag, normalizing case: the language and every other subtag lower case, a
    /// script title case, a region upper case (`pt-br` → `pt-BR`, `zh-hant` → `zh-Hant`).
    pub fn parse(tag: &str) -> Result<Locale, BadLocale> {
        let bad = || BadLocale(banter_protocol::quoted_input(tag));
        if tag.is_empty() || tag.len() > Self::MAX_LEN || !tag.is_ascii() {
            return Err(bad());
        }
        let parts: Vec<&str> = tag.split('-').collect();
        let alpha = |p: &str| p.bytes().all(|b| b.is_ascii_alphabetic());
        let digit = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        let alnum = |p: &str| p.bytes().all(|b| b.is_ascii_alphanumeric());
        if parts
            .iter()
            .any(|p| p.is_empty() || p.len() > 8 || !alnum(p))
        {
            return Err(bad());
        }
        let mut out: Vec<String> = Vec::with_capacity(parts.len());
        let mut at = 0;
        let language = parts[0];
        if !alpha(language) || !(2..=3).contains(&language.len()) {
            return Err(bad());
        }
        out.push(language.to_ascii_lowercase());
        at += 1;
        {
            let mut extlangs = 0;
            while extlangs < 3 && parts.get(at).is_some_and(|p| p.len() == 3 && alpha(p)) {
                out.push(parts[at].to_ascii_lowercase());
                at += 1;
                extlangs += 1;
            }
        }
        if let Some(script) = parts.get(at).filter(|p| p.len() == 4 && alpha(p)) {
            let lower = script.to_ascii_lowercase();
            out.push(format!(
                "{}{}",
                &lower[..1].to_ascii_uppercase(),
                &lower[1..]
            ));
            at += 1;
        }
        if let Some(region) = parts
            .get(at)
            .filter(|p| (p.len() == 2 && alpha(p)) || (p.len() == 3 && digit(p)))
        {
            out.push(region.to_ascii_uppercase());
            at += 1;
        }
        let variants_from = out.len();
        while let Some(variant) = parts.get(at).filter(|p| {
            (5..=8).contains(&p.len()) || (p.len() == 4 && p.as_bytes()[0].is_ascii_digit())
        }) {
            let variant = variant.to_ascii_lowercase();
            if out[variants_from..].contains(&variant) {
                return Err(bad());
            }
            out.push(variant);
            at += 1;
        }
        let mut singletons: Vec<u8> = Vec::new();
        while let Some(singleton) = parts.get(at).filter(|p| p.len() == 1) {
            let s = singleton.as_bytes()[0].to_ascii_lowercase();
            at += 1;
            out.push(char::from(s).to_string());
            let min = if s == b'x' { 1 } else { 2 };
            let from = at;
            while parts
                .get(at)
                .is_some_and(|p| p.len() >= min && (s == b'x' || p.len() > 1))
            {
                out.push(parts[at].to_ascii_lowercase());
                at += 1;
            }
            if at == from || singletons.contains(&s) {
                return Err(bad());
            }
            singletons.push(s);
            if s == b'x' {
                break;
            }
        }
        if at != parts.len() {
            return Err(bad());
        }
        Ok(Locale(out.join("-")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The tags to look a line up in, most specific first: `pt-BR` gives `pt-BR`, `pt`. The
    /// source comes after the last.
    pub fn fallback_chain(&self) -> Vec<Locale> {
        self.chain().map(|tag| Locale(tag.to_owned())).collect()
    }

    /// The same chain as tags borrowed from this one, with no allocation (a per-talk lookup).
    pub fn chain(&self) -> impl Iterator<Item = &str> {
        std::iter::successors(Some(self.0.as_str()), |tag| {
            tag.rsplit_once('-').map(|(shorter, _)| shorter)
        })
    }

    /// True for the built-in pseudo-locale.
    pub fn is_pseudo(&self) -> bool {
        self.0 == PSEUDO
    }
}

impl fmt::Display for Locale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `locales/locales.json`: the source language, and the length limits translators are held to.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct LocaleSettings {
    /// The language the content is written in.
    pub source: String,
    /// Visible graphemes (the typewriter's count) a translated line may have at most.
    #[serde(default)]
    pub max_length: MaxLength,
}

/// Length limits by kind of line; none by default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct MaxLength {
    /// An NPC line.
    #[serde(default)]
    pub line: Option<usize>,
    /// A response button.
    #[serde(default)]
    pub response: Option<usize>,
}

impl Default for LocaleSettings {
    fn default() -> Self {
        LocaleSettings {
            source: "en".into(),
            max_length: MaxLength::default(),
        }
    }
}

/// The content's languages: its source and every table in `locales/`.
#[derive(Clone, Debug, Default)]
pub struct Locales {
    pub settings: LocaleSettings,
    /// Tables by locale tag.
    pub tables: BTreeMap<Locale, StringTable>,
}

impl Locales {
    /// Every locale a client may ask for: the source, each table's, and the pseudo-locale.
    pub fn available(&self) -> Vec<String> {
        let mut out = vec![self.settings.source.clone()];
        out.extend(self.tables.keys().map(|l| l.to_string()));
        out.push(PSEUDO.to_owned());
        out.dedup();
        out
    }

    /// The text of line `id` (whose source text is `source`) in `locale`: the first table of its
    /// fallback chain with a translation, else `None` (the source's text stands). The
    /// pseudo-locale's is made from the source ([`pseudo`]), as a player in it reads it.
    pub fn text<'a>(&'a self, locale: &Locale, id: &str, source: &str) -> Option<Cow<'a, str>> {
        if locale.is_pseudo() {
            return Some(Cow::Owned(pseudo(source)));
        }
        locale
            .chain()
            .filter_map(|tag| self.tables.get(&Locale(tag.to_owned())))
            .find_map(|table| table.translation(id))
            .map(Cow::Borrowed)
    }

    /// `conversation` as a player in `locale` reads it; `None` when the locale has nothing to
    /// change (the source, or a locale without a table in its chain).
    pub fn localize(&self, conversation: &Conversation, locale: &Locale) -> Option<Conversation> {
        if locale.is_pseudo() {
            return Some(localize(conversation, |_, text| Some(pseudo(text))));
        }
        let chain: Vec<&StringTable> = locale
            .fallback_chain()
            .iter()
            .filter_map(|l| self.tables.get(l))
            .collect();
        if chain.is_empty() {
            return None;
        }
        Some(localize(conversation, |id, _| {
            id.and_then(|id| chain.iter().find_map(|t| t.translation(id)))
                .map(str::to_owned)
        }))
    }
}

/// Gives every line of `conversation` that has a clip in `manifest` its [`VoiceLine`] for
/// `locale`: the clip at `voice/<locale>/<line id>.wav`, or for the source language also the
/// older convention `voice/<Speaker>/<Node>.wav`. Lines without a clip keep none.
pub fn attach_voice(
    conversation: &mut Conversation,
    manifest: &crate::text::VoiceManifest,
    locale: &str,
    is_source: bool,
) {
    let speaker = conversation.speaker.clone().unwrap_or_default();
    for (name, node) in &mut conversation.nodes {
        let by_id = node
            .line
            .as_deref()
            .and_then(|id| crate::text::localized_voice_clip_path(locale, id).ok());
        let by_name = is_source
            .then(|| crate::text::voice_clip_path(&speaker, name).ok())
            .flatten();
        node.voice = [by_id, by_name].into_iter().flatten().find_map(|clip| {
            let length = manifest.clip_length(&clip)?;
            Some(crate::model::VoiceLine {
                clip,
                millis: u64::try_from(length.as_millis()).unwrap_or(u64::MAX),
            })
        });
    }
}

/// A recording script for a voice studio, as CSV (RFC 4180): one row per NPC line with text
/// in `locale` (its translation, else the source; the pseudo-locale's for [`PSEUDO`]), with its
/// id, speaker, the line before it (in `locale` too), the writer's direction, the locale and
/// the clip path the game will look for. Responses and barks are left out unless
/// `with_player` (the protagonist is voiced too); a greyed-out response's reason is read on a
/// button, never said, and is always left out.
pub fn recording_script(
    index: &crate::lines::LineIndex,
    locales: &Locales,
    locale: &Locale,
    with_player: bool,
) -> String {
    let mut out = String::from("line_id,speaker,text,previous_line,direction,locale,clip\n");
    let mut lines: Vec<&crate::lines::Line> = index.lines.values().collect();
    lines.sort_by(|a, b| a.site.cmp(&b.site).then_with(|| a.id.cmp(&b.id)));
    for line in lines {
        if line.site.disabled {
            continue;
        }
        let spoken_by_player =
            line.site.response.is_some() || line.id.starts_with(crate::lines::BARK_PREFIX);
        if spoken_by_player && !with_player {
            continue;
        }
        let text = locales.text(locale, &line.id, &line.text);
        let text = text.as_deref().unwrap_or(&line.text);
        // The line before, as the actor's scene partner says it in this locale.
        let previous = line.previous.as_deref().map(|source| {
            line.previous_id
                .as_deref()
                .and_then(|id| locales.text(locale, id, source))
                .unwrap_or(Cow::Borrowed(source))
        });
        let clip =
            crate::text::localized_voice_clip_path(locale.as_str(), &line.id).unwrap_or_default();
        let fields = [
            line.id.as_str(),
            line.speaker.as_str(),
            text,
            previous.as_deref().unwrap_or(""),
            line.direction.as_deref().unwrap_or(""),
            locale.as_str(),
            clip.as_str(),
        ];
        let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// A CSV field: quoted when it holds a comma, a quote or a line break, quotes doubled.
fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_owned()
    }
}

/// `conversation` with each line's and response's text, and each greyed-out response's reason
/// (`Disabled`, by its `DisabledLineId`), replaced by `translate(line id, source text)` where
/// that gives one; nothing else changes.
pub fn localize(
    conversation: &Conversation,
    translate: impl Fn(Option<&str>, &str) -> Option<String>,
) -> Conversation {
    let mut out = conversation.clone();
    for node in out.nodes.values_mut() {
        if let Some(text) = translate(node.line.as_deref(), &node.text) {
            node.text = text;
        }
        if let Exit::Responses(responses) = &mut node.exit {
            for response in responses {
                if let Some(text) = translate(response.line.as_deref(), &response.text) {
                    response.text = text;
                }
                if let Some(reason) = &response.disabled
                    && let Some(text) = translate(response.disabled_line.as_deref(), reason)
                {
                    response.disabled = Some(text);
                }
            }
        }
    }
    out
}

/// The pseudo-localized form of a line: each ASCII letter of its text that has a common
/// accented form swapped for it ([`accented`]), about 40% more visible graphemes padded at the
/// end, the whole in `[` `]`. Tags, entities and `{placeholders}` are kept as they are, so the
/// checks still pass on it and a renderer still reads its markup.
pub fn pseudo(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let mut out = String::with_capacity(text.len() * 2);
    out.push('[');
    let mut protected: Option<char> = None;
    let mut letters = 0usize;
    for c in text.chars() {
        match (protected, c) {
            (Some(close), c) => {
                out.push(c);
                if c == close {
                    protected = None;
                }
            }
            (None, '<') => {
                protected = Some('>');
                out.push(c);
            }
            (None, '&') => {
                protected = Some(';');
                out.push(c);
            }
            (None, '{') => {
                protected = Some('}');
                out.push(c);
            }
            (None, c) => {
                letters += usize::from(!c.is_whitespace());
                out.push(accented(c));
            }
        }
    }
    // About 40% longer: translations into most languages are, and a layout that only fits
    // English breaks here first.
    let padding = (letters * 2).div_ceil(5);
    if padding > 0 {
        out.push(' ');
        for i in 0..padding {
            out.push(if i % 2 == 0 { '~' } else { '·' });
        }
    }
    out.push(']');
    out
}

/// Every ASCII letter with a common accented form, as one precomposed character (so one
/// grapheme, as the typewriter counts): 19 letters of each case. `b`, `f`, `m`, `p`, `q`, `v` and
/// `x` have none in common use and stay as they are.
fn accented(c: char) -> char {
    match c {
        'a' => 'á',
        'c' => 'ç',
        'd' => 'ď',
        'e' => 'é',
        'g' => 'ĝ',
        'h' => 'ĥ',
        'i' => 'î',
        'j' => 'ĵ',
        'k' => 'ķ',
        'l' => 'ļ',
        'n' => 'ñ',
        'o' => 'ö',
        'r' => 'ŕ',
        's' => 'š',
        't' => 'ţ',
        'u' => 'ü',
        'w' => 'ŵ',
        'y' => 'ý',
        'z' => 'ž',
        'A' => 'Á',
        'C' => 'Ç',
        'D' => 'Ď',
        'E' => 'É',
        'G' => 'Ĝ',
        'H' => 'Ĥ',
        'I' => 'Î',
        'J' => 'Ĵ',
        'K' => 'Ķ',
        'L' => 'Ļ',
        'N' => 'Ñ',
        'O' => 'Ö',
        'R' => 'Ŕ',
        'S' => 'Š',
        'T' => 'Ţ',
        'U' => 'Ü',
        'W' => 'Ŵ',
        'Y' => 'Ý',
        'Z' => 'Ž',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::visible_graphemes;

    #[test]
    fn tags_are_bcp47_normalized_and_fall_back_to_shorter_ones() {
        let tag = Locale::parse("pt-br").expect("the test input is valid");
        assert_eq!(tag.as_str(), "pt-BR");
        assert_eq!(
            tag.fallback_chain()
                .iter()
                .map(Locale::as_str)
                .collect::<Vec<_>>(),
            ["pt-BR", "pt"]
        );
        assert_eq!(
            Locale::parse("zh-hant-tw")
                .expect("the test input is valid")
                .as_str(),
            "zh-Hant-TW"
        );
        for bad in [
            "",
            "j",
            "japanese",
            "ja--JP",
            "ja-",
            "1a",
            "ja-JP-toolongsubtag",
            "ja JP",
            "pt_BR",
            "en-US-GB",
            "en-XA-XB",
            "de-1996-1996",
            "en-u-nu-latn-u-ca-gregory",
            "en-u",
            "en-a-b",
            "en-x",
            "x-private",
            "i-klingon",
            "ja-Jpan-Kana",
            "日本",
            "ja-\u{e9}",
            "ja-JP-",
            "-ja",
        ] {
            assert!(Locale::parse(bad).is_err(), "{bad:?}");
        }
        for (good, normalized) in [
            ("ja", "ja"),
            ("JA-jp", "ja-JP"),
            ("en-XA", "en-XA"),
            ("en-xa-u-nu-latn", "en-XA-u-nu-latn"),
            ("en-Latn-XA", "en-Latn-XA"),
            ("es-419", "es-419"),
            ("zh-yue-HK", "zh-yue-HK"),
            ("sl-rozaj-biske", "sl-rozaj-biske"),
            ("de-CH-1901", "de-CH-1901"),
            ("en-US-x-twain", "en-US-x-twain"),
            ("en-a-bbb-x-a-ccc", "en-a-bbb-x-a-ccc"),
            ("qps-ploc", "qps-Ploc"),
        ] {
            assert_eq!(
                Locale::parse(good).map(|l| l.as_str().to_owned()),
                Ok(normalized.to_owned()),
                "{good:?}"
            );
        }
        assert!(Locale::parse(&"a".repeat(1000)).is_err());
    }

    #[test]
    fn csv_fields_are_quoted_only_when_they_must_be() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a, b"), "\"a, b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn pseudo_text_is_bracketed_accented_longer_and_keeps_its_markup() {
        let source = "Hello <b>{name}</b> &amp; welcome!";
        let p = pseudo(source);
        assert!(p.starts_with('[') && p.ends_with(']'), "{p}");
        assert!(p.contains("<b>{name}</b>") && p.contains("&amp;"), "{p}");
        assert!(p.contains('É') || p.contains('é'), "{p}");
        let (before, after) = (visible_graphemes(source), visible_graphemes(&p));
        assert!(after * 10 >= before * 13, "{before} -> {after}: {p}");
        assert_eq!(pseudo(""), "");
    }

    #[test]
    fn every_letter_with_a_common_accent_gets_it_in_both_cases() {
        for lower in 'a'..='z' {
            let upper = lower.to_ascii_uppercase();
            let (a, b) = (accented(lower), accented(upper));
            if "bfmpqvx".contains(lower) {
                assert_eq!((a, b), (lower, upper), "no common accented {lower}");
                continue;
            }
            assert!(!a.is_ascii() && a.is_lowercase(), "{lower} -> {a}");
            assert_eq!(b.to_string(), a.to_uppercase().to_string(), "{upper}");
            assert_eq!(visible_graphemes(&a.to_string()), 1, "{a} is one grapheme");
        }
        for other in ['0', ' ', '!', '\'', 'é', 'し'] {
            assert_eq!(accented(other), other);
        }
        let pangram = "The quick brown fox jumps over the lazy dog";
        let p = pseudo(pangram);
        let kept: String = p.chars().filter(char::is_ascii_alphabetic).collect();
        assert_eq!(kept, "qbfxmpv", "only the letters without one: {p}");
    }

    #[test]
    fn the_pseudo_locale_reads_every_line_accented() {
        let locales = Locales::default();
        let pseudo_locale = Locale::parse(PSEUDO).expect("the pseudo-locale's tag");
        let text = locales.text(&pseudo_locale, "line:1", "Shh! I'm counting.");
        assert_eq!(text.as_deref(), Some("[Šĥĥ! Î'm çöüñţîñĝ. ~·~·~·~]"));
        let ja = Locale::parse("ja").expect("a valid tag");
        assert_eq!(
            locales.text(&ja, "line:1", "Shh!"),
            None,
            "no table: the source"
        );
    }
}
