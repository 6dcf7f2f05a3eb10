//! The conformance vectors in `conformance/`: what correct looks like for a client in any
//! language, produced here from the Rust implementation.
//!
//! Each vector file is regenerated and compared with the committed one: a change to the rules
//! that is not re-recorded fails this test. Re-record with
//! `BANTER_BLESS=1 cargo test -p banter-dialogue --test conformance`, and the committed vectors
//! are then checked by every client (`conformance/README.md`). The Rust crates run them too, in
//! the test below each generator: a vector is only trusted once the implementation it came from
//! replays it.

mod content_support;

use std::collections::BTreeMap;
use std::path::PathBuf;

use banter_dialogue::ballot;
use banter_dialogue::canonical;
use banter_dialogue::check;
use banter_dialogue::text::{balanced_prefix, prefix, visible_graphemes};
use banter_dialogue::{
    ChoiceRule, ChoiceSpec, ClientWalk, Condition, DialogueGraph, Outgoing, Screen, VertexId,
    VertexKind, WalkError, build_conversation, next_line,
};
use banter_protocol::{
    Action, ActionPayload, ActionType, ChoiceMode, DecidedBy, FactSheet, QuestStatus, TieRule,
};
use serde_json::{Value, json};
use strum::VariantArray;

fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../conformance")
}

/// Writes `value` (with BANTER_BLESS=1) or checks the committed file is exactly it.
fn bless_or_check(file: &str, value: &Value) {
    let path = conformance_dir().join(file);
    let text = format!(
        "{}\n",
        serde_json::to_string_pretty(value).expect("vectors serialize")
    );
    if std::env::var_os("BANTER_BLESS").is_some() {
        std::fs::create_dir_all(conformance_dir()).expect("conformance folder");
        std::fs::write(&path, &text).expect("write vectors");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} is out of date: BANTER_BLESS=1 cargo test -p banter-dialogue --test conformance",
        path.display()
    );
}

fn sample() -> banter_dialogue::content::Content {
    let (content, diagnostics) = check::load_and_check(&content_support::sample_content());
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    content
}

// ---------------------------------------------------------------------------------------------
// Payloads.

fn error_kind(e: &banter_protocol::PayloadError) -> &'static str {
    match e {
        banter_protocol::PayloadError::FieldCount { .. } => "field_count",
        banter_protocol::PayloadError::BadEscape { .. } => "bad_escape",
        banter_protocol::PayloadError::BadAmount { .. } => "bad_amount",
    }
}

fn payload_vectors() -> Value {
    let content = sample();
    // Every action the sample authors, then the escapes and corners the sample lacks.
    let mut actions: Vec<Action> = Vec::new();
    for merged in content.merged.values() {
        for node in merged.nodes.values() {
            actions.extend(node.actions.iter().cloned());
            if let banter_dialogue::Exit::Responses(responses) = &node.exit {
                for r in responses {
                    actions.extend(r.actions.iter().cloned());
                }
            }
        }
    }
    actions.extend([
        Action::AcceptQuest {
            quest_id: "Pipe|Quest".into(),
        },
        Action::CompleteQuest {
            quest_id: "Back\\slash".into(),
        },
        Action::CheckQuest {
            quest_id: "Q".into(),
            success_node: "Ok|Node".into(),
            failure_node: "Not\\Yet|".into(),
        },
        Action::AdvanceObjective {
            quest_id: "Q".into(),
            objective_id: "O".into(),
            amount: Some(banter_protocol::ObjectiveAmount {
                amount: 4_294_967_295,
                island: Some("isle|with\\both".into()),
            }),
        },
        Action::PlayCutscene {
            scene: "Scene".into(),
            quest_id: None,
        },
        Action::OpenSellMenu,
        Action::OpenShop {
            shop: "日本の店".into(),
        },
        // An `Amount` without an `Island` is written when the content states it, 1 included:
        // only an absent `Amount` (and no `Island`) leaves the field out.
        Action::AdvanceObjective {
            quest_id: "Q".into(),
            objective_id: "O".into(),
            amount: Some(banter_protocol::ObjectiveAmount {
                amount: 1,
                island: None,
            }),
        },
        Action::AdvanceObjective {
            quest_id: "Q".into(),
            objective_id: "O".into(),
            amount: Some(banter_protocol::ObjectiveAmount {
                amount: 3,
                island: None,
            }),
        },
        Action::AdvanceObjective {
            quest_id: "Q".into(),
            objective_id: "O".into(),
            amount: None,
        },
        // A `CheckQuest` missing `SuccessNode` or `FailureNode` (content refuses it:
        // "CheckQuest needs both SuccessNode and FailureNode") is read with the missing node
        // empty, and its payload writes an empty field: `Q||`, `Q|Ok|`, `Q||No`.
        Action::CheckQuest {
            quest_id: "Q".into(),
            success_node: String::new(),
            failure_node: String::new(),
        },
        Action::CheckQuest {
            quest_id: "Q".into(),
            success_node: "Ok".into(),
            failure_node: String::new(),
        },
        Action::CheckQuest {
            quest_id: "Q".into(),
            success_node: String::new(),
            failure_node: "No".into(),
        },
    ]);
    let mut seen = std::collections::BTreeSet::new();
    let build: Vec<Value> = actions
        .iter()
        .filter(|a| seen.insert(format!("{a:?}")))
        .map(|a| json!({ "action": canonical::action_json(a), "payload": ActionPayload::build(a) }))
        .collect();
    let parse_cases: Vec<(ActionType, &str)> = vec![
        (ActionType::AcceptQuest, "Quest"),
        (ActionType::AcceptQuest, "Pipe\\|Quest"),
        (ActionType::AcceptQuest, "a|b"),
        (ActionType::AcceptQuest, "bad\\escape"),
        (ActionType::AcceptQuest, "trailing\\"),
        (ActionType::CheckQuest, "Q|Ok"),
        (ActionType::CheckQuest, "Q|Ok|No"),
        (ActionType::AdvanceObjective, "Q|O"),
        (ActionType::AdvanceObjective, "Q|O|2"),
        (ActionType::AdvanceObjective, "Q|O|2|isle"),
        (ActionType::AdvanceObjective, "Q|O|02"),
        (ActionType::AdvanceObjective, "Q|O|+2"),
        (ActionType::AdvanceObjective, "Q|O|2.0"),
        (ActionType::AdvanceObjective, "Q|O|"),
        (ActionType::AdvanceObjective, "Q|O|4294967296"),
        (ActionType::AdvanceObjective, "Q|O|1|isle|extra"),
        (ActionType::AdvanceObjective, "Q"),
        (ActionType::OpenSellMenu, ""),
        (ActionType::PlayCutscene, "Scene|Quest"),
        (ActionType::ChooseRideBoat, ""),
        // An amount is at least 1: content refuses `Amount` 0, and so does the payload.
        (ActionType::AdvanceObjective, "Q|O|0"),
        (ActionType::AdvanceObjective, "Q|O|1"),
        (ActionType::AdvanceObjective, "Q|O|-1"),
        // Several errors at once: a bad escape wins over the field count, which wins over
        // the amount (the escapes are read first, left to right, then the fields counted,
        // then the amount read).
        (ActionType::AcceptQuest, "a\\x|b"),
        (ActionType::AdvanceObjective, "Q|O|02|x|y"),
        (ActionType::AdvanceObjective, "Q|O|0\\"),
        (ActionType::AdvanceObjective, "Q|O|x|isle\\q"),
        // `OpenSellMenu` takes only the empty payload: anything else is `field_count`, even a
        // single non-empty field; a bad escape still comes first.
        (ActionType::OpenSellMenu, "x"),
        (ActionType::OpenSellMenu, "|"),
        (ActionType::OpenSellMenu, "\\|"),
        (ActionType::OpenSellMenu, " "),
        (ActionType::OpenSellMenu, "\\x"),
        // An empty field is an empty identifier: it parses (content never authors one, so such
        // a payload matches no armed action). A `CheckQuest`'s empty nodes are left out of the
        // action, as content leaves out a missing node.
        (ActionType::AcceptQuest, ""),
        (ActionType::OpenShop, ""),
        (ActionType::CheckQuest, "||"),
        (ActionType::CheckQuest, "Q|Ok|"),
        (ActionType::AdvanceObjective, "|"),
        (ActionType::AdvanceObjective, "Q|O|1|"),
        (ActionType::PlayCutscene, "Scene|"),
        (ActionType::PlayCutscene, ""),
    ];
    let parse: Vec<Value> = parse_cases
        .iter()
        .map(
            |(action_type, payload)| match ActionPayload::parse(*action_type, payload) {
                Ok(action) => json!({
                    "type": action_type.name(),
                    "payload": payload,
                    "action": canonical::action_json(&action),
                }),
                Err(e) => json!({
                    "type": action_type.name(),
                    "payload": payload,
                    "error": error_kind(&e),
                }),
            },
        )
        .collect();
    json!({ "build": build, "parse": parse })
}

#[test]
fn payload_vectors_are_current_and_replay() {
    let vectors = payload_vectors();
    bless_or_check("payloads.json", &vectors);
    // Replay: every build parses back to its action, every parse case gives its verdict.
    for case in vectors["build"].as_array().expect("build") {
        let payload = case["payload"].as_str().expect("payload");
        let action: Value = case["action"].clone();
        let action_type: ActionType = action["Type"]
            .as_str()
            .expect("Type")
            .parse()
            .expect("type");
        let parsed = ActionPayload::parse(action_type, payload).expect("a built payload parses");
        assert_eq!(canonical::action_json(&parsed), action);
    }
    assert!(
        vectors["parse"]
            .as_array()
            .expect("parse")
            .iter()
            .any(|c| c.get("error").is_some())
    );
}

// ---------------------------------------------------------------------------------------------
// Visible graphemes and typewriter prefixes.

fn text_vectors() -> Value {
    // Each text with the rule it shows (docs/CONTENT.md, "Rich text").
    let texts: &[(&str, &str)] = &[
        ("Hello there.", "plain text: one grapheme a character"),
        (
            "<b>Bold</b> and <i>italic</i>",
            "tags draw nothing; the last prefix keeps the closing tag",
        ),
        ("<font color=\"#fff\">hi</font>", "a tag with an attribute"),
        (
            "<color=\"a>b\">x</color>",
            "a double-quoted value right after `=` may hold `>`",
        ),
        (
            "<color='a>b'>x</color>",
            "a single-quoted value right after `=` may hold `>`",
        ),
        (
            "<i'm>x",
            "a quote not right after `=` is an ordinary byte: the tag ends at the first `>`",
        ),
        (
            "<color=\"a>b",
            "an unclosed quoted value: not a tag, the `<` is visible",
        ),
        (
            "<b>bold <i>both</b> plain",
            "a closing tag closes the nearest open tag of its name and those opened after it",
        ),
        (
            "<B>x</b>",
            "tag names match case-insensitively when balancing",
        ),
        (
            "</b>x",
            "a closing tag that matches nothing is ignored when balancing",
        ),
        (
            "<color=#f00>red</color>",
            "a tag's name ends at the first character that is not a letter, digit, `-`, `_` or `:`",
        ),
        (
            "a<x/>b<br>c<br />d",
            "self-closing tags and `<br>` open nothing",
        ),
        (
            "<x/\t\n>a<y/\u{feff}>b<z/\u{85}>c",
            "a tag is self-closing when its last character before `>` that is not ASCII whitespace (space, tab, line feed, form feed, carriage return) is `/`: other spaces (U+FEFF, U+0085) are part of the tag, so `<y/\u{feff}>` and `<z/\u{85}>` open `y` and `z`",
        ),
        ("<!-- a comment -->visible", "a comment is invisible"),
        (
            "a<!-- never closed",
            "an unterminated comment is not a comment: its `<` and the rest are visible",
        ),
        ("<!---->x", "an empty comment"),
        (
            "Fish &amp; chips &lt;3 &#39;ok&#x27; &nbsp;end",
            "an entity is one character",
        ),
        ("&amp;&lt;&gt;&quot;&apos;&nbsp;", "the six named entities"),
        (
            "&AMP; &Amp;",
            "entity names are case-sensitive: `&AMP;` is five visible characters",
        ),
        (
            "&foo; &amp no entity &#xD800;",
            "an unknown name, a missing `;`, a surrogate: not entities, their `&` visible",
        ),
        (
            "&#65;&#x41;&#X41;",
            "decimal and hex numeric references, `x` or `X`",
        ),
        (
            "&#0065;&#x0041;",
            "leading zeros count toward the digit limit",
        ),
        (
            "&#1114111;&#x10FFFF;",
            "the largest code point: 7 decimal or 6 hex digits",
        ),
        ("&#1114112;&#x110000;", "above U+10FFFF: not an entity"),
        (
            "&#11141110;&#x0010FFFF;",
            "more than 7 decimal or 6 hex digits: not an entity",
        ),
        ("&#0;&#x0;", "NUL is refused: not an entity"),
        (
            "&#xDFFF;&#55296;",
            "surrogates are refused in hex and decimal",
        ),
        ("&#;&#x;&#x41", "no digits, or no `;`: not an entity"),
        ("&#65x;", "a non-digit before the `;`: not an entity"),
        ("a < b > c, <3", "a lone `<` or `>` is visible"),
        ("x<y", "a `<` with no `>` after it is visible"),
        (
            "a <1b>",
            "a `<` must be followed by a letter (or `/` and a letter) to open a tag",
        ),
        ("<<b>x</b>", "a `<` before another `<` is visible"),
        (
            "e\u{301}te\u{301} cafe\u{301}",
            "a combining accent joins its letter: one grapheme",
        ),
        (
            "<b>e&#x301;</b>",
            "references are decoded before graphemes are counted",
        ),
        (
            "e<b>&#x301;</b>",
            "a tag inside a cluster does not split it",
        ),
        (
            "しーっ！ヤドカリを数えてるの。",
            "CJK: one grapheme a character",
        ),
        ("<color=#f00>赤い</color>魚", "CJK with tags"),
        ("مَرْحَبًا يا بيم", "Arabic with vowel marks"),
        (
            "👨‍👩‍👧 🇯🇵 👍🏽",
            "a ZWJ family, a flag and a skin tone are one grapheme each",
        ),
        (
            "line<br/>break\nnewline",
            "a line break is a grapheme; `<br/>` is a tag",
        ),
        ("cr\r\nlf", "CR LF is one grapheme"),
        (
            "<b><i>x</i></b>",
            "nested tags: balanced prefixes close innermost first",
        ),
        ("", "the empty line"),
        (
            "<a x= \"1>\">a</a><b x=\t'2>'>b</b><i x=\n\"3>\">c</i><u x=\u{c}\r \"4>\">d</u>",
            "space, tab, line feed, form feed and carriage return may come between `=` and the quote",
        ),
        (
            "<font color =  \"a>b\">x</font>",
            "whitespace before the `=` too: the quote follows `=` once whitespace is skipped",
        ),
        (
            "<a x=\u{b}\"1>\">y</a>",
            "a vertical tab is not whitespace: the quote is an ordinary byte and the tag ends at the first `>`",
        ),
        (
            "<a x=\u{a0}\"1>\">y</a>",
            "a no-break space is not whitespace: the quote is an ordinary byte and the tag ends at the first `>`",
        ),
        (
            "<color=\"a<b\">x</color>",
            "inside a quoted value a `<` is an ordinary byte: only the closing quote ends the value",
        ),
        (
            "<color='a<b>c'>x</color>",
            "inside a quoted value `<` and `>` are both ordinary bytes",
        ),
        (
            "a<!-- <b>x</b>",
            "an unterminated `<!--` is text, and scanning goes on after its `<`: later tags are still tags",
        ),
        (
            "a<!--x-->b<!-- c<i>d</i>",
            "a comment closes at its first `-->`; a later unterminated `<!--` is text, its tags still tags",
        ),
        (
            "<b></b>",
            "no visible grapheme: the one prefix (0) is the whole source, tags included",
        ),
        (
            "<b><i>",
            "no visible grapheme and tags left open: the one prefix is the whole source, balanced closes them",
        ),
        (
            "<!-- only a comment --><br/>",
            "no visible grapheme: a comment and a tag alone, the one prefix is the whole source",
        ),
        (
            "<B>hi</b>",
            "an appended closing tag spells the name as its opening tag does",
        ),
        (
            "<Color=#f00><I>hey</I></COLOR>",
            "appended closing tags spell each name as written, innermost first",
        ),
        (
            "a<BR>b<Br/>c<bR >d<br>e",
            "`br` opens nothing in any case: `<BR>`, `<Br/>`, `<bR >`, `<br>`",
        ),
        (
            "<hr>a<img src=\"x.png\">b",
            "`br` is the only name that never takes a closing tag: `<hr>` and `<img>` open tags that balanced prefixes close",
        ),
        (
            "<h1>T</h1><bé>xy</bé>",
            "a tag's name is a run of ASCII letters, digits, `-`, `_` and `:`: `<h1>` is `h1`, `<bé>` is `b` and is closed by `</b>`",
        ),
        (
            "<é>x</é>",
            "a tag begins with an ASCII letter after `<` or `</`: `<é>` and `</é>` are text",
        ),
        (
            "a</ b>c",
            "`</` must be followed at once by an ASCII letter: `</ b>` is text",
        ),
        (
            "<!-->x",
            "`-->` is searched from the end of `<!--`: `<!-->` is not a comment, its `<` and `>` are visible",
        ),
        (
            "<!--->x",
            "`-->` is searched from the end of `<!--`: `<!--->` is not a comment",
        ),
        (
            "<!-->a-->b",
            "`<!-->` does not close at its own `>`: the comment runs to the first `-->` after `<!--`",
        ),
        (
            "<b>x</b title=\"a>b\">y",
            "a closing tag is read by the same rules: a value quoted after `=` may hold `>`",
        ),
        (
            "<b>x</b/>y",
            "a closing tag is never self-closing: `</b/>` closes `b`",
        ),
    ];
    Value::Array(
        texts
            .iter()
            .map(|(text, rule)| {
                let n = visible_graphemes(text);
                json!({
                    "text": text,
                    "rule": rule,
                    "visible": n,
                    "prefixes": (0..=n).map(|k| prefix(text, k)).collect::<Vec<_>>(),
                    "balanced_prefixes": (0..=n).map(|k| balanced_prefix(text, k)).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

#[test]
fn text_vectors_are_current() {
    bless_or_check("text.json", &text_vectors());
}

// ---------------------------------------------------------------------------------------------
// Conditions.

fn facts(quests: &[(&str, QuestStatus)], coins: i64, has: &[&str]) -> FactSheet {
    FactSheet {
        quests: quests.iter().map(|(q, s)| ((*q).to_owned(), *s)).collect(),
        progress: BTreeMap::from([("CopperSnappers/Catch".to_owned(), 2)]),
        coins,
        experience: 40,
        tutorial_stage: 3,
        has: has.iter().map(|h| (*h).to_owned()).collect(),
        ..FactSheet::default()
    }
}

fn condition_vectors() -> Value {
    let sheet = facts(
        &[
            ("CopperSnappers", QuestStatus::Completed),
            ("LostReel", QuestStatus::Active),
        ],
        120,
        &["Dialogue.Talking", "PostReveal"],
    );
    // Each case with what it shows. The groups: atoms, precedence and grouping, integers,
    // whitespace, the bounds, and one case (at least) of every error class.
    let nest = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
    let nots = |n: usize| format!("{}true", "!".repeat(n));
    let padded = |bytes: usize| {
        let core = "coins >= 100";
        format!("{core}{}", " ".repeat(bytes - core.len()))
    };
    let mut cases: Vec<(String, &str)> = [
        ("true", "a constant"),
        ("false", "a constant"),
        ("coins >= 100", "a counter against an integer"),
        ("coins < 100", "a counter against an integer"),
        ("experience == 40", "a counter against an integer"),
        ("tutorial_stage != 3", "a counter against an integer"),
        ("100 <= coins", "the integer may come first"),
        ("coins > experience", "two counters compared"),
        ("3 > 2", "two integers compared"),
        ("quest(CopperSnappers) == completed", "a quest status"),
        ("quest(LostReel) == active", "a quest status"),
        (
            "quest(VoyageToMistral) == available",
            "a quest the sheet leaves out is available",
        ),
        (
            "quest(VoyageToMistral) != available",
            "a quest the sheet leaves out is available",
        ),
        (
            "quest(VoyageToMistral) == unavailable",
            "a quest the sheet leaves out is available",
        ),
        ("has(PostReveal)", "a tag in facts.has"),
        ("has(Dialogue.Talking)", "a state name with a dot"),
        ("has(Afk)", "a name not in facts.has is false"),
        ("!has(Afk)", "negation"),
        (
            "progress(CopperSnappers, Catch) >= 2",
            "an objective's progress",
        ),
        (
            "progress(CopperSnappers, Catch) < 2",
            "an objective's progress",
        ),
        (
            "progress(Nothing, Here) == 0",
            "progress the sheet leaves out is 0",
        ),
        ("has(PostReveal) && coins >= 200", "and"),
        ("has(Afk) || coins >= 100", "or"),
        ("(coins >= 100 && !has(Afk)) || false", "grouping"),
        (
            "true || false && false",
            "&& binds tighter than ||: true || (false && false)",
        ),
        ("(true || false) && false", "parentheses override it"),
        ("!true || true", "! binds tighter than ||: (!true) || true"),
        ("!(true || true)", "! of a group"),
        ("!!true", "! may repeat"),
        (
            "false && true || true",
            "left to right at each level: (false && true) || true",
        ),
        ("true && true && false", "a chain of &&"),
        ("false || false || true", "a chain of ||"),
        (
            "coins == -5",
            "a negative integer: `-` directly before the digits",
        ),
        ("-5 < 0", "a negative integer first"),
        ("0 == -0", "-0 is 0"),
        ("007 == 7", "leading zeros are allowed"),
        (
            "9223372036854775807 > 0",
            "the largest 64-bit signed integer",
        ),
        (
            "-9223372036854775808 < 0",
            "the smallest 64-bit signed integer",
        ),
        (
            "coins > -9223372036854775808",
            "the smallest 64-bit signed integer",
        ),
        ("9223372036854775808 > 0", "error: one above the largest"),
        ("-9223372036854775809 < 0", "error: one below the smallest"),
        (
            "coins == - 5",
            "error: a `-` must be followed at once by a digit",
        ),
        (
            "coins == --5",
            "error: a `-` must be followed at once by a digit",
        ),
        (
            "coins == 5-",
            "error: a `-` must be followed at once by a digit",
        ),
        ("coins == 1.5", "error: no fractions"),
        ("coins == 1e3", "error: no exponents"),
        ("coins == +5", "error: no `+` sign"),
        (
            "  coins\t>=\n100\r ",
            "whitespace: space, tab, line feed, carriage return anywhere between tokens",
        ),
        ("has( PostReveal )", "whitespace inside the parentheses"),
        (
            "quest (LostReel) == active",
            "whitespace between a keyword and its `(`",
        ),
        ("coins>=100&&has(PostReveal)", "no whitespace at all"),
        (
            "coins\u{a0}>= 100",
            "error: a no-break space is not whitespace",
        ),
        (
            "coins\u{b}>= 100",
            "error: a vertical tab is not whitespace",
        ),
        ("coins > = 100", "error: an operator is never split"),
        ("", "error: an empty condition"),
        ("   ", "error: only whitespace"),
        ("!", "error: a lone !"),
        ("()", "error: empty parentheses"),
        ("(true", "error: an unclosed parenthesis"),
        ("true)", "error: trailing input"),
        ("true true", "error: trailing input"),
        ("coins", "error: a counter alone is not a condition"),
        ("coins >=", "error: a comparison without its right side"),
        ("1 < 2 < 3", "error: comparisons do not chain"),
        ("coins >= 1 &&", "error: && without its right side"),
        ("|| true", "error: || without its left side"),
        ("coins = 100", "error: `=` is not an operator"),
        ("coins >= 100 & true", "error: `&` is not an operator"),
        ("gold >= 100", "error: an unknown counter"),
        ("Coins >= 100", "error: names are case-sensitive"),
        ("quest(X) == nonsense", "error: an unknown quest status"),
        ("quest(X) == Active", "error: statuses are lower case"),
        (
            "quest(X) > active",
            "error: a quest compares only with == or !=",
        ),
        ("quest(X)", "error: a quest without its comparison"),
        (
            "has(PostReveal) == true",
            "error: has(...) is a condition, not a value",
        ),
        ("has(", "error: an unclosed has("),
        ("has()", "error: has needs a name"),
        ("has(1abc)", "error: a name starts with a letter or _"),
        ("has(a-b)", "error: `-` is not part of a name"),
        (
            "progress(CopperSnappers) >= 1",
            "error: progress takes a quest and an objective",
        ),
        (
            "progress(CopperSnappers, Catch)",
            "error: a value alone is not a condition",
        ),
        ("coins >= 100 # note", "error: no comments"),
        ("TRUE", "error: constants are lower case"),
        ("has(Über)", "error: names are ASCII"),
        (
            "has(true)",
            "a NAME may spell a keyword: has(true) asks for the tag `true`",
        ),
        (
            "!has(false) && !has(has)",
            "a NAME may spell a keyword: has(false), has(has)",
        ),
        (
            "quest(has) == available",
            "a NAME may spell a keyword: the quest `has`, absent, is available",
        ),
        (
            "progress(coins, true) == 0",
            "a NAME may spell a counter or a keyword: progress(coins, true) is absent, so 0",
        ),
        (
            "true == true",
            "error: true and false are conditions, not values",
        ),
        (
            "coins!=5",
            "operators are read longest first: `!=` before `!`",
        ),
        (
            "coins<=120",
            "operators are read longest first: `<=` before `<`",
        ),
        (
            "coins>=120&&!has(Afk)",
            "operators are read longest first: `>=` before `>`, `&&` then `!`",
        ),
        (
            "coins<-5",
            "`<` then `-5`: a `-` before a digit starts a number",
        ),
        (
            "coins !== 120",
            "error: `!=` is read first, then a lone `=`",
        ),
        (
            "coins <== 120",
            "error: `<=` is read first, then a lone `=`",
        ),
        ("coins <> 120", "error: `<` then `>`: there is no `<>`"),
        (
            "coins =< 120",
            "error: `=` is not an operator: there is no `=<`",
        ),
    ]
    .into_iter()
    .map(|(text, why)| (text.to_owned(), why))
    .collect();
    cases.extend([
        (nest(32), "32 nested parentheses: the deepest allowed"),
        (nest(33), "error: 33 nested parentheses"),
        (nots(32), "32 `!` in a row: each counts toward the depth"),
        (nots(33), "error: 33 `!` in a row"),
        (format!("!{}", nest(31)), "`!` and `(` count together: 32"),
        (format!("!{}", nest(32)), "error: `!` and `(` together: 33"),
        (
            format!("{}has(PostReveal){}", "(".repeat(32), ")".repeat(32)),
            "the `(` of has(...) does not count toward the depth: 32 groups around it are allowed",
        ),
        (
            format!("{}has(PostReveal){}", "(".repeat(33), ")".repeat(33)),
            "error: 33 grouping parentheses around has(...)",
        ),
        (
            format!(
                "{}quest(LostReel) == active{}",
                "(".repeat(32),
                ")".repeat(32)
            ),
            "the `(` of quest(...) does not count toward the depth",
        ),
        (
            format!(
                "{}progress(CopperSnappers, Catch) >= 2{}",
                "(".repeat(32),
                ")".repeat(32)
            ),
            "the `(` of progress(...) does not count toward the depth",
        ),
        (
            format!("{}!has(Afk){}", "(".repeat(31), ")".repeat(31)),
            "31 groups and a `!` before has(...): 32",
        ),
        (
            format!("{}!has(Afk){}", "(".repeat(32), ")".repeat(32)),
            "error: 32 groups and a `!` before has(...): 33",
        ),
        (
            format!(
                "{}true{} && {}true{}",
                "(".repeat(32),
                ")".repeat(32),
                "(".repeat(32),
                ")".repeat(32)
            ),
            "the depth is how deep, not how many: two groups of 32 side by side are allowed",
        ),
        (padded(1024), "1,024 bytes: the longest allowed"),
        (padded(1025), "error: 1,025 bytes"),
    ]);
    let cases: Vec<Value> = cases
        .iter()
        .map(|(text, why)| match Condition::parse(text) {
            Ok(condition) => {
                json!({ "condition": text, "holds": condition.eval(&sheet), "why": why })
            }
            Err(_) => json!({ "condition": text, "error": true, "why": why }),
        })
        .collect();
    // The cases say what they show; a wrong label would teach the wrong rule.
    for case in &cases {
        let is_error = case.get("error").is_some();
        let labelled = case["why"].as_str().is_some_and(|w| w.starts_with("error"));
        assert_eq!(is_error, labelled, "{case}");
    }
    json!({ "facts": sheet, "cases": cases })
}

#[test]
fn condition_vectors_are_current() {
    bless_or_check("conditions.json", &condition_vectors());
}

// ---------------------------------------------------------------------------------------------
// Client walks: a conversation, the facts, the inputs, and exactly what the client must send
// and show after each.

fn wire(graph: &DialogueGraph, out: &mut Vec<Outgoing>) -> Vec<Value> {
    out.drain(..)
        .filter_map(|o| o.message(graph))
        .map(|m| serde_json::to_value(m).expect("message"))
        .collect()
}

fn screen(graph: &DialogueGraph, walk: &ClientWalk, facts: &FactSheet) -> Value {
    let name = |v: VertexId| {
        graph
            .vertex(v)
            .map(|v| v.name.to_string())
            .unwrap_or_default()
    };
    match walk.screen() {
        Screen::Line(line) => json!({
            "line": name(line),
            "text": graph.vertex(line).map(|v| v.text.to_string()).unwrap_or_default(),
            "choices": walk.choices(graph, facts).map(name).collect::<Vec<_>>(),
            "can_advance": walk.can_advance(graph, facts),
        }),
        Screen::Waiting => json!({ "waiting_for_jump": true }),
        Screen::Ended => json!({ "ended": true }),
    }
}

/// The wire code a server answers a walk error with (`docs/PROTOCOL.md` section 7).
fn walk_code(e: &WalkError) -> &'static str {
    use WalkError as E;
    match e {
        E::UnknownVertex => "unknown_vertex",
        E::NotReachable => "not_reachable",
        E::NotALine => "not_a_line",
        E::NotAResponse => "not_a_response",
        E::AwaitsChoice => "awaits_choice",
        E::AwaitsJump => "awaits_jump",
        E::ConditionFailed => "condition_failed",
        E::ResponseDisabled => "response_disabled",
        E::NotArmed => "not_armed",
        E::PayloadMismatch => "payload_mismatch",
        E::Closed => "no_conversation",
        E::BadJumpTarget => "internal",
    }
}

/// `{"advance": node}`: the player advances past `node`, by name. The client walk answers it as
/// the server's walk does: the line on screen, or any line shown before.
fn advance_named(
    graph: &DialogueGraph,
    walk: &mut ClientWalk,
    node: &str,
    facts: &FactSheet,
    out: &mut Vec<Outgoing>,
) -> Result<(), WalkError> {
    let named = find_named(graph, walk, node)?;
    walk.advance(graph, named, facts, out)
}

/// `{"choose": response}`: the player picks `response`, by name.
fn choose_named(
    graph: &DialogueGraph,
    walk: &mut ClientWalk,
    response: &str,
    facts: &FactSheet,
    out: &mut Vec<Outgoing>,
) -> Result<(), WalkError> {
    let named = find_named(graph, walk, response)?;
    walk.choose(graph, named, facts, out)
}

/// The vertex a client message names, in the server's order: no conversation before an
/// unknown name.
fn find_named(graph: &DialogueGraph, walk: &ClientWalk, name: &str) -> Result<VertexId, WalkError> {
    if walk.walk().is_closed() {
        return Err(WalkError::Closed);
    }
    graph.find(name).ok_or(WalkError::UnknownVertex)
}

/// One input as the vectors write it (`advance`, `choose` or the server's `jump`), given to the
/// client walk.
fn give(
    graph: &DialogueGraph,
    walk: &mut ClientWalk,
    input: &Value,
    facts: &FactSheet,
    out: &mut Vec<Outgoing>,
) -> Result<(), WalkError> {
    let name = |key: &str| input.get(key).and_then(Value::as_str);
    if let Some(node) = name("advance") {
        advance_named(graph, walk, node, facts, out)
    } else if let Some(response) = name("choose") {
        choose_named(graph, walk, response, facts, out)
    } else {
        let target = name("jump")
            .and_then(|node| graph.find(node))
            .ok_or(WalkError::UnknownVertex)?;
        walk.jump(graph, target, facts, out)
    }
}

/// One step as the vectors write it: the facts if they just changed, the input, what was sent,
/// and the screen after it or the code it was refused with.
fn step_json(
    graph: &DialogueGraph,
    walk: &ClientWalk,
    out: &mut Vec<Outgoing>,
    facts: Option<&FactSheet>,
    input: Value,
    result: Result<(), WalkError>,
    now: &FactSheet,
) -> Value {
    let mut step = json!({ "input": input, "sends": wire(graph, out) });
    if let Some(facts) = facts {
        step["facts"] = json!(facts);
    }
    match result {
        Ok(()) => step["screen"] = screen(graph, walk, now),
        Err(e) => step["refused"] = json!(walk_code(&e)),
    }
    step
}

/// The scripted refusals, each given at most once per scenario, the first time the walk is in
/// the state it needs.
#[derive(Default)]
struct Probed {
    awaits_choice: bool,
    response_as_line: bool,
    line_as_response: bool,
    ahead: bool,
    condition: bool,
    waiting: bool,
    again: bool,
}

/// The facts as they would be had the player accepted, elsewhere (another session), a quest this
/// conversation offers, chosen so that `target`'s conditions now fail and `keep`'s still hold.
fn accepted_elsewhere(
    graph: &DialogueGraph,
    facts: &FactSheet,
    target: VertexId,
    keep: VertexId,
) -> Option<FactSheet> {
    let condition = graph.condition(target)?;
    let offered = graph
        .vertices()
        .flat_map(|(id, _)| graph.actions(id).map(|(_, a)| a.action.clone()))
        .filter_map(|a| match a {
            Action::AcceptQuest { quest_id } => Some(quest_id),
            _ => None,
        });
    for quest in offered {
        if facts
            .quests
            .get(&quest)
            .is_some_and(|s| *s != QuestStatus::Available)
        {
            continue;
        }
        let mut changed = facts.clone();
        changed.quests.insert(quest, QuestStatus::Active);
        if !condition.eval(&changed) && graph.condition(keep).is_none_or(|c| c.eval(&changed)) {
            return Some(changed);
        }
    }
    None
}

/// Plays from `entry`: at each line pick the choice `pick(step)` of those shown (or advance),
/// answer a quest check with its success node, and along the way give the inputs the rules
/// refuse (each refusal sends nothing and changes nothing, so the walk's path is the one it
/// takes without them): a response that does not exist; advancing a line that waits for a
/// choice, a response on screen, the line that has not been shown yet; picking the line on
/// screen as a response; picking a response whose conditions stopped holding (the facts changed:
/// a quest it offers was accepted in another session); advancing or picking again while the
/// server's jump is awaited; advancing again once the conversation has ended. And one input the
/// rules accept although it is not on screen: the step that led to the line on screen, given
/// again (`R` only grows), which shows the line again.
fn scenario(
    name: &str,
    conversation: &str,
    json_text: &str,
    entry: &str,
    sheet: &FactSheet,
    pick: usize,
) -> Value {
    let (graph, diagnostics) = build_conversation(conversation, json_text);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let vertex_name = |v: VertexId| {
        graph
            .vertex(v)
            .map(|v| v.name.to_string())
            .expect("a vertex of the graph")
    };
    let mut out = Vec::new();
    let entry_id = graph.find(entry).expect("entry");
    let mut walk = ClientWalk::open(&graph, entry_id, sheet, &mut out).expect("opens");
    let open = json!({ "sends": wire(&graph, &mut out), "screen": screen(&graph, &walk, sheet) });
    let mut facts = sheet.clone();
    let mut steps = Vec::new();
    let mut refused_once = false;
    let mut probed = Probed::default();
    // The line last on screen and the response last picked: what the player still sees while
    // the server's jump is awaited, and once the conversation has ended.
    let mut last_line: Option<VertexId> = None;
    let mut last_choice: Option<VertexId> = None;
    // The accepted input that put the line on screen (not a jump).
    let mut came_by: Option<Value> = None;
    for step in 0..40 {
        // The scripted inputs this state allows, each with the answer it must get.
        let mut probes: Vec<(Value, Result<(), WalkError>, Option<FactSheet>)> = Vec::new();
        match walk.screen() {
            Screen::Ended => break,
            Screen::Line(line) => {
                last_line = Some(line);
                // The step that led here, given again: accepted (`R` only grows), and the line
                // is shown again with its choices as they hold now.
                if step >= 1
                    && !probed.again
                    && let Some(input) = came_by.clone()
                {
                    let mut alone = walk.clone();
                    let again = give(&graph, &mut alone, &input, &facts, &mut Vec::new());
                    if again.is_ok() && alone.screen() == walk.screen() {
                        probed.again = true;
                        probes.push((input, Ok(()), None));
                    }
                }
                let choices: Vec<VertexId> = walk.choices(&graph, &facts).collect();
                if let Some(&first) = choices.first() {
                    if !std::mem::replace(&mut probed.awaits_choice, true) {
                        probes.push((
                            json!({ "advance": vertex_name(line) }),
                            Err(WalkError::AwaitsChoice),
                            None,
                        ));
                    }
                    if !std::mem::replace(&mut probed.response_as_line, true) {
                        probes.push((
                            json!({ "advance": vertex_name(first) }),
                            Err(WalkError::NotALine),
                            None,
                        ));
                    }
                    // The line on screen named as a response: shown, but not a response.
                    if !std::mem::replace(&mut probed.line_as_response, true) {
                        probes.push((
                            json!({ "choose": vertex_name(line) }),
                            Err(WalkError::NotAResponse),
                            None,
                        ));
                    }
                    let intended = choices[(pick + step) % choices.len()];
                    if !probed.condition {
                        let stale = choices.iter().filter(|&&r| r != intended).find_map(|&r| {
                            accepted_elsewhere(&graph, &facts, r, intended).map(|f| (r, f))
                        });
                        if let Some((r, changed)) = stale {
                            probed.condition = true;
                            probes.push((
                                json!({ "choose": vertex_name(r) }),
                                Err(WalkError::ConditionFailed),
                                Some(changed),
                            ));
                        }
                    }
                }
                // The reply that has not been shown yet: the line after the one on screen, or
                // after its first response.
                let from = choices.first().copied().unwrap_or(line);
                if !probed.ahead
                    && let Some(next) = next_line(&graph, from, &facts)
                    && !walk.walk().is_reachable(next)
                {
                    probed.ahead = true;
                    probes.push((
                        json!({ "advance": vertex_name(next) }),
                        Err(WalkError::NotReachable),
                        None,
                    ));
                }
            }
            Screen::Waiting => {
                if !std::mem::replace(&mut probed.waiting, true) {
                    let line = last_line.expect("a line was on screen");
                    let response = last_choice.expect("a response was picked");
                    // Until the jump, every step is refused: the check line, and the response
                    // that asked for the check, although both are in `R`.
                    probes.push((
                        json!({ "advance": vertex_name(line) }),
                        Err(WalkError::AwaitsJump),
                        None,
                    ));
                    probes.push((
                        json!({ "choose": vertex_name(response) }),
                        Err(WalkError::AwaitsJump),
                        None,
                    ));
                }
            }
        }
        for (input, expected, changed) in probes {
            if let Some(changed) = &changed {
                facts = changed.clone();
            }
            let result = give(&graph, &mut walk, &input, &facts, &mut out);
            assert_eq!(result, expected, "{name}: {input}");
            steps.push(step_json(
                &graph,
                &walk,
                &mut out,
                changed.as_ref(),
                input,
                result,
                &facts,
            ));
        }
        let (input, result) = match walk.screen() {
            Screen::Ended => break,
            Screen::Line(_) if !refused_once && step == 1 => {
                // A response that is not on screen: the client refuses it and sends nothing.
                refused_once = true;
                let bogus = format!("{entry}_r99");
                let result = choose_named(&graph, &mut walk, &bogus, &facts, &mut out);
                (json!({ "choose": bogus }), result)
            }
            Screen::Line(line) => {
                let choices: Vec<VertexId> = walk.choices(&graph, &facts).collect();
                if choices.is_empty() {
                    if !walk.can_advance(&graph, &facts) {
                        break;
                    }
                    let name = vertex_name(line);
                    let result = advance_named(&graph, &mut walk, &name, &facts, &mut out);
                    (json!({ "advance": name }), result)
                } else {
                    // The choice for this step, or the next one whose conditions still hold
                    // (the facts may have changed since the line was shown).
                    let n = choices.len();
                    let Some(choice) = (0..n)
                        .map(|k| choices[(pick + step + k) % n])
                        .find(|&r| graph.condition(r).is_none_or(|c| c.eval(&facts)))
                    else {
                        break;
                    };
                    last_choice = Some(choice);
                    let name = vertex_name(choice);
                    let result = choose_named(&graph, &mut walk, &name, &facts, &mut out);
                    (json!({ "choose": name }), result)
                }
            }
            Screen::Waiting => {
                // The server's answer to the CheckQuest just sent (on the line or response
                // reached last that carries one): its success node.
                let target = walk
                    .walk()
                    .reachable()
                    .iter()
                    .rev()
                    .flat_map(|&id| graph.actions(id).map(|(_, a)| a.action.clone()))
                    .find_map(|a| match a {
                        Action::CheckQuest { success_node, .. } => Some(success_node),
                        _ => None,
                    })
                    .expect("a check to answer");
                let target_id = graph.find(&target).expect("target");
                (
                    json!({ "jump": target }),
                    walk.jump(&graph, target_id, &facts, &mut out),
                )
            }
        };
        came_by = (result.is_ok() && input.get("jump").is_none()).then(|| input.clone());
        steps.push(step_json(
            &graph, &walk, &mut out, None, input, result, &facts,
        ));
    }
    // Past the end: the player presses on the last line again.
    if walk.screen() == Screen::Ended
        && let Some(line) = last_line
    {
        let name = vertex_name(line);
        let result = advance_named(&graph, &mut walk, &name, &facts, &mut out);
        assert_eq!(result, Err(WalkError::Closed), "{name}");
        steps.push(step_json(
            &graph,
            &walk,
            &mut out,
            None,
            json!({ "advance": name }),
            result,
            &facts,
        ));
    }
    json!({
        "name": name,
        "conversation": conversation,
        "entry": entry,
        "facts": sheet,
        "open": open,
        "steps": steps,
    })
}

/// A conversation written for the rules the sample content never needs: an entry and a jump
/// target shown whatever their `Conditions`, a line whose responses are all hidden, a line that
/// carries `CheckQuest` itself, an `Island` that forces the amount, and a `Text` with markup (the
/// screen's `text` is the source as written, not decoded).
const RULES: &str = r#"{
  "FirstNode": "Door",
  "Speaker": "Keeper",
  "Door": { "Text": "Who&apos;s <i>there</i>?", "Conditions": "coins >= 1000", "Responses": [
    { "Text": "A rich friend.", "Conditions": "coins >= 1000", "NextNode": "Rich" },
    { "Text": "Me, with a lamp.", "Conditions": "has(Lamp)", "NextNode": "Lamp",
      "Actions": [ { "Type": "TrackQuest", "QuestId": "Lamp" } ] } ] },
  "Rich": { "Text": "Come in, come in.", "Close": true },
  "Lamp": { "Text": "Let me see it.", "NextNode": "Rich",
    "Actions": [ { "Type": "CheckQuest", "QuestId": "Lamp", "SuccessNode": "Bright", "FailureNode": "Dim" } ] },
  "Bright": { "Text": "Bright as day!", "Conditions": "coins >= 1000", "Close": true,
    "Actions": [ { "Type": "AdvanceObjective", "QuestId": "Lamp", "ObjectiveId": "Shine", "Island": "gullrock" } ] },
  "Dim": { "Text": "Dim as dusk.", "Close": true }
}"#;

/// One scenario of explicit inputs over `json_text`: each input with the facts that change
/// before it (if any), and what the walk answers.
fn scripted_scenario(
    name: &str,
    conversation: &str,
    json_text: &str,
    entry: &str,
    sheet: &FactSheet,
    inputs: Vec<(Value, Option<FactSheet>)>,
) -> Value {
    let (graph, diagnostics) = build_conversation(conversation, json_text);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let (open, steps, _) = play_scripted(&graph, entry, sheet, inputs, screen);
    json!({
        "name": name,
        "conversation": conversation,
        "entry": entry,
        "facts": sheet,
        "open": open,
        "steps": steps,
    })
}

/// Opens on `entry` and gives each input (its facts first, if it changes them): the `open` and
/// each step as the vectors write them, every screen drawn by `show`, and the walk after.
fn play_scripted(
    graph: &DialogueGraph,
    entry: &str,
    sheet: &FactSheet,
    inputs: Vec<(Value, Option<FactSheet>)>,
    show: fn(&DialogueGraph, &ClientWalk, &FactSheet) -> Value,
) -> (Value, Vec<Value>, ClientWalk) {
    let mut out = Vec::new();
    let entry_id = graph.find(entry).expect("entry");
    let mut walk = ClientWalk::open(graph, entry_id, sheet, &mut out).expect("opens");
    let open = json!({ "sends": wire(graph, &mut out), "screen": show(graph, &walk, sheet) });
    let mut facts = sheet.clone();
    let mut steps = Vec::new();
    for (input, changed) in inputs {
        if let Some(changed) = &changed {
            facts = changed.clone();
        }
        let result = give(graph, &mut walk, &input, &facts, &mut out);
        let mut step = json!({ "input": input, "sends": wire(graph, &mut out) });
        if let Some(changed) = &changed {
            step["facts"] = json!(changed);
        }
        match result {
            Ok(()) => step["screen"] = show(graph, &walk, &facts),
            Err(e) => step["refused"] = json!(walk_code(&e)),
        }
        steps.push(step);
    }
    (open, steps, walk)
}

/// The rules the sample content never needs, step by step over [`RULES`].
fn rule_scenarios() -> (String, Vec<Value>) {
    let mut diagnostics = Vec::new();
    let file = banter_dialogue::canonical::parse_conversation(
        "Rules.json",
        RULES.as_bytes(),
        &mut diagnostics,
    )
    .expect("parses");
    let merged = banter_dialogue::layers::merge("Rules", &file, &[], &mut diagnostics);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let text = canonical::to_json(&merged);
    let poor = facts(&[], 0, &["Dialogue.Talking"]);
    let lamp = facts(
        &[("Lamp", QuestStatus::Active)],
        0,
        &["Dialogue.Talking", "Lamp"],
    );
    let lamp_lost = facts(&[("Lamp", QuestStatus::Active)], 0, &["Dialogue.Talking"]);
    let scenarios = vec![
        scripted_scenario(
            "Rules: the entry is shown whatever its conditions; every response hidden, the line is advanced past and the conversation ends",
            "Rules",
            &text,
            "Door",
            &poor,
            vec![
                (json!({ "choose": "Door_r1" }), None),
                (json!({ "advance": "Door" }), None),
                (json!({ "choose": "Door_r2" }), None),
            ],
        ),
        scripted_scenario(
            "Rules: a response that starts holding after its line was shown is not in R: not a choice, not_reachable if picked, and the line is advanced past",
            "Rules",
            &text,
            "Door",
            &poor,
            vec![
                (json!({ "choose": "Door_r2" }), Some(lamp.clone())),
                (json!({ "advance": "Door" }), None),
            ],
        ),
        scripted_scenario(
            "Rules: the responses shown stop holding: none is a choice any more, the line is advanced past",
            "Rules",
            &text,
            "Door",
            &lamp,
            vec![
                (json!({ "advance": "Door" }), None),
                (json!({ "choose": "Door_r2" }), Some(lamp_lost)),
                (json!({ "advance": "Door" }), None),
            ],
        ),
        scripted_scenario(
            "Rules: a line carrying CheckQuest sends it when shown and waits for the jump; a jump target is shown whatever its conditions; an Island forces the amount; the response action held before the jump goes out with the next accepted step after it",
            "Rules",
            &text,
            "Door",
            &lamp,
            vec![
                (json!({ "choose": "Door_r2" }), None),
                (json!({ "advance": "Lamp" }), None),
                (json!({ "choose": "Door_r2" }), None),
                (json!({ "jump": "Bright" }), None),
                (json!({ "advance": "Lamp" }), None),
                (json!({ "advance": "Bright" }), None),
                (json!({ "advance": "Bright" }), None),
            ],
        ),
    ];
    (text, scenarios)
}

/// A conversation for how branches are numbered and what a `CheckQuest` response with a
/// `NextNode` does. The node names sort differently by UTF-8 bytes (`Done` < `Start` < `after` <
/// `Ｎｅｔ` < `🐟`) than by UTF-16 code units (`🐟` before `Ｎｅｔ`) or case-insensitively
/// (`after` first), and both `Ｎｅｔ` and `🐟` carry a list, so each order numbers the branches
/// differently. `Start_r1`'s one-name list is a branch; `Start_r2`'s plain name is not.
const BRANCHES: &str = r#"{
  "FirstNode": "Start",
  "Speaker": "Sorter",
  "Start": { "Text": "Which way?", "Responses": [
    { "Text": "After you.", "NextNode": ["after"] },
    { "Text": "By the net.", "NextNode": "Ｎｅｔ" },
    { "Text": "Check my catch.", "NextNode": "Done",
      "Actions": [ { "Type": "CheckQuest", "QuestId": "Catch", "SuccessNode": "🐟", "FailureNode": "Done" } ] } ] },
  "after": { "Text": "After me, then.", "NextNode": ["Ｎｅｔ"] },
  "Ｎｅｔ": { "Text": "A net.", "NextNode": ["🐟", "Done"] },
  "🐟": { "Text": "A fish!", "NextNode": ["Done"] },
  "Done": { "Text": "Done.", "Close": true }
}"#;

/// Branch numbering and a `CheckQuest` response with a `NextNode`, step by step over
/// [`BRANCHES`].
fn branch_scenarios() -> (String, Vec<Value>) {
    let mut diagnostics = Vec::new();
    let file = banter_dialogue::canonical::parse_conversation(
        "Branches.json",
        BRANCHES.as_bytes(),
        &mut diagnostics,
    )
    .expect("parses");
    let merged = banter_dialogue::layers::merge("Branches", &file, &[], &mut diagnostics);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let text = canonical::to_json(&merged);
    // The numbers the scenario names: vertices 1 to 5 are the nodes in UTF-8 byte order, 6 to 8
    // `Start`'s responses, then the branches of `Start_r1`, `after`, `Ｎｅｔ` and `🐟`.
    let (graph, _) = build_conversation("Branches", &text);
    let branches: Vec<String> = graph
        .vertices()
        .filter(|(_, v)| v.kind == VertexKind::Branch)
        .map(|(_, v)| v.name.to_string())
        .collect();
    assert_eq!(
        branches,
        ["Start_b9", "after_b10", "Ｎｅｔ_b11", "🐟_b12"],
        "the branches of BRANCHES"
    );
    let fresh = facts(&[], 0, &["Dialogue.Talking"]);
    let scenarios = vec![
        scripted_scenario(
            "Branches: a one-name NextNode list is a branch (Start_b9), a plain NextNode is not (no Start_b10); branches are numbered after the nodes sorted by the UTF-8 bytes of their names (Ｎｅｔ before 🐟, Start before after)",
            "Branches",
            &text,
            "Start",
            &fresh,
            vec![
                (json!({ "advance": "Start_b9" }), None),
                (json!({ "advance": "Start_b10" }), None),
                (json!({ "choose": "after_b10" }), None),
                (json!({ "advance": "Ｎｅｔ_b11" }), None),
                (json!({ "advance": "🐟_b12" }), None),
                (json!({ "advance": "🐟_b11" }), None),
                (json!({ "choose": "Start_r1" }), None),
                (json!({ "advance": "after" }), None),
                (json!({ "advance": "Ｎｅｔ" }), None),
                (json!({ "advance": "🐟" }), None),
                (json!({ "advance": "Done" }), None),
            ],
        ),
        scripted_scenario(
            "Branches: a response carrying CheckQuest waits for the jump whether or not it has a NextNode: no line on screen, its NextNode never shown (not_reachable), then the jump's line",
            "Branches",
            &text,
            "Start",
            &fresh,
            vec![
                (json!({ "choose": "Start_r3" }), None),
                (json!({ "advance": "Done" }), None),
                (json!({ "advance": "Start" }), None),
                (json!({ "jump": "🐟" }), None),
                (json!({ "advance": "🐟" }), None),
                (json!({ "advance": "Done" }), None),
            ],
        ),
    ];
    (text, scenarios)
}

/// Names that are not a line or a response of the conversation, over a sample conversation with
/// a `NextNode` list: the reserved keys `FirstNode` and `Speaker` and the empty name are no
/// vertex (`unknown_vertex`); the hidden vertex of a `NextNode` list is one, never shown
/// (`not_reachable`), named `<node>_b<n>`; a target the list skipped is `not_reachable`.
fn name_scenarios(content: &banter_dialogue::content::Content) -> Vec<Value> {
    let conversation = "Marisol";
    let merged = content.merged.get(conversation).expect("Marisol");
    let text = canonical::to_json(merged);
    let (graph, _) = build_conversation(conversation, &text);
    let picked = graph.find("Marisol_Hello_r3").expect("Marisol_Hello_r3");
    let branch = graph
        .outputs(picked)
        .iter()
        .find_map(|&v| graph.vertex(v).filter(|v| v.kind == VertexKind::Branch))
        .map(|v| v.name.to_string())
        .expect("Marisol_Hello_r3 leads to a NextNode list");
    // docs/PROTOCOL.md section 8.2 names this branch as its example of the generated name.
    let protocol = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/PROTOCOL.md"),
    )
    .expect("docs/PROTOCOL.md");
    assert!(
        protocol.contains(&format!("the branch `{branch}`")),
        "docs/PROTOCOL.md section 8.2 should name Marisol_Hello_r3's branch `{branch}`"
    );
    let fresh = facts(&[], 0, &["Dialogue.Talking"]);
    vec![scripted_scenario(
        "Names: FirstNode, Speaker and the empty name are no vertex (unknown_vertex); a NextNode list is a hidden vertex <node>_b<n>, never shown (not_reachable); a target the list skipped is not_reachable",
        conversation,
        &text,
        "Marisol_Hello",
        &fresh,
        vec![
            (json!({ "advance": "FirstNode" }), None),
            (json!({ "choose": "FirstNode" }), None),
            (json!({ "advance": "Speaker" }), None),
            (json!({ "choose": "Speaker" }), None),
            (json!({ "advance": "" }), None),
            (json!({ "choose": "Marisol_Hello_r3" }), None),
            (json!({ "advance": branch }), None),
            (json!({ "choose": branch }), None),
            (json!({ "advance": "Marisol_Premium" }), None),
            (json!({ "advance": "Marisol_Regular" }), None),
        ],
    )]
}

fn client_walk_vectors() -> Value {
    let content = sample();
    let fresh = facts(&[], 0, &["Dialogue.Talking"]);
    let veteran = facts(
        &[
            ("CopperSnappers", QuestStatus::Completed),
            ("LanternsOfGullRock", QuestStatus::Completed),
            ("VoyageToMistral", QuestStatus::Completed),
        ],
        150,
        &["Dialogue.Talking", "PostReveal"],
    );
    let mut scenarios = Vec::new();
    let mut conversations = serde_json::Map::new();
    for (conversation, merged) in &content.merged {
        let text = canonical::to_json(merged);
        conversations.insert(conversation.clone(), Value::String(text.clone()));
        let first = merged.first_node.clone().expect("FirstNode");
        // Every quest greeting too: where the resolver opens for an offer.
        let mut entries = vec![first];
        entries.extend(
            merged
                .nodes
                .keys()
                .filter(|n| n.ends_with("_Greet") || n.ends_with("_Check"))
                .cloned(),
        );
        for entry in entries {
            for (label, sheet) in [("fresh", &fresh), ("veteran", &veteran)] {
                for pick in 0..2 {
                    scenarios.push(scenario(
                        &format!("{conversation} from {entry}, {label} player, pick {pick}"),
                        conversation,
                        &text,
                        &entry,
                        sheet,
                        pick,
                    ));
                }
            }
        }
    }
    let (rules, written) = rule_scenarios();
    conversations.insert("Rules".to_owned(), Value::String(rules));
    scenarios.extend(written);
    let (branches, written) = branch_scenarios();
    conversations.insert("Branches".to_owned(), Value::String(branches));
    scenarios.extend(written);
    scenarios.extend(name_scenarios(&content));
    json!({ "conversations": conversations, "scenarios": scenarios })
}

#[test]
fn client_walk_vectors_are_current() {
    let vectors = client_walk_vectors();
    let scenarios = vectors["scenarios"].as_array().expect("scenarios");
    assert!(scenarios.len() >= 40);
    // Every code a client input can be refused with, so that coverage cannot quietly shrink.
    // Not here, because no input in these files can get them from a client walk: `not_armed` and `payload_mismatch` (actions are checked by the server, not walked) and
    // `internal` (a server's jump to something that is not a line).
    let refused: std::collections::BTreeSet<&str> = scenarios
        .iter()
        .flat_map(|s| s["steps"].as_array().expect("steps"))
        .filter_map(|step| step["refused"].as_str())
        .collect();
    let expected = std::collections::BTreeSet::from([
        "awaits_choice",
        "awaits_jump",
        "condition_failed",
        "no_conversation",
        "not_a_line",
        "not_a_response",
        "not_reachable",
        "unknown_vertex",
    ]);
    assert_eq!(refused, expected, "the refusal codes in client_walk.json");
    bless_or_check("client_walk.json", &vectors);
}

// ---------------------------------------------------------------------------------------------
// Ballots (PROTOCOL.md section 17.3): how a shared conversation's group picks a response.

/// The conversation every ballot case is over: four responses under one line, in priority order.
const BALLOT: &str = r#"{
  "FirstNode": "Boats",
  "Speaker": "Wren",
  "Shared": { "Mode": "Majority" },
  "Boats": { "Text": "Which boat?", "Responses": [
    { "Text": "The skiff.", "NextNode": "Off" },
    { "Text": "The dory.", "NextNode": "Off" },
    { "Text": "The barge.", "NextNode": "Off" },
    { "Text": "We swim.", "NextNode": "Off" } ] },
  "Off": { "Text": "Off we go.", "Close": true }
}"#;

/// A rule as the vectors write it: the keys of the resolved rule, `TimeLimit` only when there is
/// one and `Tie` only for `Majority`.
fn rule_json(rule: &ChoiceRule) -> Value {
    let mut out = json!({ "Mode": <&str>::from(rule.mode) });
    if let Some(secs) = rule.time_limit_secs {
        out["TimeLimit"] = json!(secs);
    }
    if rule.mode == ChoiceMode::Majority {
        out["Tie"] = json!(<&str>::from(rule.tie));
    }
    out
}

fn rule_of(mode: ChoiceMode, time_limit: Option<u32>, tie: Option<TieRule>) -> ChoiceRule {
    ChoiceSpec {
        mode: Some(mode),
        time_limit,
        tie,
    }
    .rule()
}

fn decision_json(graph: &DialogueGraph, decision: Option<&ballot::Decision>) -> Value {
    match decision {
        None => Value::Null,
        Some(d) => json!({
            "response": graph.vertex(d.response).map(|v| v.name.to_string()).unwrap_or_default(),
            "by": <&str>::from(d.by),
            "rolls": d.rolls.iter().map(|(player, roll)| json!({ "player": player, "roll": roll })).collect::<Vec<_>>(),
        }),
    }
}

/// One ballot case: what it shows, then the ballot, and how it must come out (`None`: not
/// decided), which the generator checks so a label cannot lie.
struct BallotCase {
    why: String,
    rule: ChoiceRule,
    participants: Vec<&'static str>,
    leader: &'static str,
    /// The votes as cast, in order; a player's later vote replaces their earlier one.
    cast: Vec<(&'static str, u32)>,
    expired: bool,
    seed: u64,
    by: Option<DecidedBy>,
}

/// The first seed from `from` for which `good` holds of the draws.
fn seed_where(from: u64, good: impl Fn(u64) -> bool) -> u64 {
    (from..from + 100_000)
        .find(|&s| good(s))
        .expect("a seed within reach")
}

fn ballot_cases() -> Vec<BallotCase> {
    use ChoiceMode::{All, Leader, Majority, Roll};
    use DecidedBy as By;
    let p2 = vec!["ana", "bo"];
    let p3 = vec!["ana", "bo", "cy"];
    let p4 = vec!["ana", "bo", "cy", "di"];
    let p5 = vec!["ana", "bo", "cy", "di", "ed"];
    let leader = rule_of(Leader, None, None);
    let majority = |tie| rule_of(Majority, None, Some(tie));
    let roll = rule_of(Roll, None, None);
    let timed_roll = rule_of(Roll, Some(20), None);
    let all = rule_of(All, None, None);
    // Seeds that make the rolls say something: two voters rolling the same highest, a tie of two
    // picked each way, a tie of three picked last.
    let equal_two = seed_where(1, |s| ballot::roll(s, 0) == ballot::roll(s, 1));
    let equal_highest_late = seed_where(1, |s| {
        let (a, b, c) = (ballot::roll(s, 0), ballot::roll(s, 1), ballot::roll(s, 2));
        b == c && b > a
    });
    let tie_first_of_two = seed_where(1, |s| ballot::draw(s, 0).is_multiple_of(2));
    let tie_second_of_two = seed_where(1, |s| ballot::draw(s, 0) % 2 == 1);
    let tie_third_of_three = seed_where(1, |s| ballot::draw(s, 0) % 3 == 2);
    let second_voter_wins = seed_where(8, |s| {
        let (a, b, c) = (ballot::roll(s, 0), ballot::roll(s, 1), ballot::roll(s, 2));
        b > a && b > c
    });
    let case = |why: &str,
                rule: ChoiceRule,
                participants: &Vec<&'static str>,
                leader: &'static str,
                cast: &[(&'static str, u32)],
                expired: bool,
                seed: u64,
                by: Option<DecidedBy>| BallotCase {
        why: why.to_owned(),
        rule,
        participants: participants.clone(),
        leader,
        cast: cast.to_vec(),
        expired,
        seed,
        by,
    };
    vec![
        // Leader.
        case(
            "Leader: the leader's vote decides at once",
            leader,
            &p3,
            "ana",
            &[("ana", 2)],
            false,
            0,
            Some(By::Leader),
        ),
        case(
            "Leader: the others' votes are suggestions; without the leader's vote nothing is decided",
            leader,
            &p3,
            "ana",
            &[("bo", 1), ("cy", 1)],
            false,
            0,
            None,
        ),
        case(
            "Leader: the leader's vote wins over every other",
            leader,
            &p3,
            "bo",
            &[("ana", 1), ("cy", 1), ("bo", 3)],
            false,
            0,
            Some(By::Leader),
        ),
        case(
            "Leader: a changed vote, only the latest counts",
            leader,
            &p3,
            "ana",
            &[("ana", 1), ("bo", 2), ("ana", 3)],
            false,
            0,
            Some(By::Leader),
        ),
        case(
            "Leader: no time limit; an expired flag changes nothing",
            leader,
            &p3,
            "ana",
            &[("bo", 4)],
            true,
            0,
            None,
        ),
        case(
            "Leader: the leader is whoever leads now (after the first leader left)",
            leader,
            &p2,
            "bo",
            &[("bo", 4), ("ana", 1)],
            false,
            0,
            Some(By::Leader),
        ),
        // Majority.
        case(
            "Majority: two of three is more than half, decided at once",
            majority(TieRule::Leader),
            &p3,
            "ana",
            &[("bo", 2), ("cy", 2)],
            false,
            0,
            Some(By::Majority),
        ),
        case(
            "Majority: two of four is not more than half; it waits",
            majority(TieRule::Leader),
            &p4,
            "ana",
            &[("bo", 2), ("cy", 2)],
            false,
            0,
            None,
        ),
        case(
            "Majority: three of four is more than half",
            majority(TieRule::Leader),
            &p4,
            "ana",
            &[("ana", 3), ("bo", 3), ("di", 3)],
            false,
            0,
            Some(By::Majority),
        ),
        case(
            "Majority: more than half of the participants, not of the voters: one vote of two waits",
            majority(TieRule::Leader),
            &p2,
            "ana",
            &[("bo", 1)],
            false,
            0,
            None,
        ),
        case(
            "Majority: one participant, one vote: decided at once",
            majority(TieRule::Leader),
            &vec!["ana"],
            "ana",
            &[("ana", 4)],
            false,
            0,
            Some(By::Majority),
        ),
        case(
            "Majority: at the time limit the most votes win",
            majority(TieRule::Leader),
            &p4,
            "ana",
            &[("ana", 1), ("bo", 3), ("cy", 3)],
            true,
            0,
            Some(By::Majority),
        ),
        case(
            "Majority: at the time limit a single vote wins",
            majority(TieRule::First),
            &p4,
            "ana",
            &[("di", 4)],
            true,
            0,
            Some(By::Majority),
        ),
        case(
            "Majority: at the time limit with no vote, nothing is decided (the first vote after it will)",
            majority(TieRule::Leader),
            &p3,
            "ana",
            &[],
            true,
            0,
            None,
        ),
        case(
            "Majority: before the time limit with no vote, nothing is decided",
            majority(TieRule::Leader),
            &p3,
            "ana",
            &[],
            false,
            0,
            None,
        ),
        case(
            "Majority, Tie Leader: a tie at the limit goes to the leader's vote, among the tied",
            majority(TieRule::Leader),
            &p4,
            "cy",
            &[("ana", 1), ("bo", 3), ("cy", 3), ("di", 1)],
            true,
            0,
            Some(By::TieLeader),
        ),
        case(
            "Majority, Tie Leader: a three-way tie, the leader among it",
            majority(TieRule::Leader),
            &p3,
            "bo",
            &[("ana", 1), ("bo", 2), ("cy", 3)],
            true,
            0,
            Some(By::TieLeader),
        ),
        case(
            "Majority, Tie Leader: the leader voted for none of the tied: as First (tie_first)",
            majority(TieRule::Leader),
            &p5,
            "ana",
            &[("ana", 4), ("bo", 3), ("cy", 3), ("di", 2), ("ed", 2)],
            true,
            0,
            Some(By::TieFirst),
        ),
        case(
            "Majority, Tie Leader: the leader did not vote: as First (tie_first)",
            majority(TieRule::Leader),
            &p4,
            "ana",
            &[("bo", 3), ("cy", 2)],
            true,
            0,
            Some(By::TieFirst),
        ),
        case(
            "Majority, Tie First: the tied response written first (lowest priority) wins",
            majority(TieRule::First),
            &p4,
            "ana",
            &[("ana", 3), ("bo", 2), ("cy", 3), ("di", 2)],
            true,
            0,
            Some(By::TieFirst),
        ),
        case(
            "Majority, Tie First: a three-way tie, the first written wins whoever leads",
            majority(TieRule::First),
            &p3,
            "cy",
            &[("ana", 4), ("bo", 3), ("cy", 2)],
            true,
            0,
            Some(By::TieFirst),
        ),
        case(
            "Majority, Tie Roll: tied[draw(seed, 0) mod 2] in priority order: the first",
            majority(TieRule::Roll),
            &p4,
            "ana",
            &[("ana", 3), ("bo", 1), ("cy", 3), ("di", 1)],
            true,
            tie_first_of_two,
            Some(By::TieRoll),
        ),
        case(
            "Majority, Tie Roll: tied[draw(seed, 0) mod 2] in priority order: the second",
            majority(TieRule::Roll),
            &p4,
            "ana",
            &[("ana", 3), ("bo", 1), ("cy", 3), ("di", 1)],
            true,
            tie_second_of_two,
            Some(By::TieRoll),
        ),
        case(
            "Majority, Tie Roll: tied[draw(seed, 0) mod 3] of a three-way tie",
            majority(TieRule::Roll),
            &p3,
            "ana",
            &[("ana", 4), ("bo", 1), ("cy", 2)],
            true,
            tie_third_of_three,
            Some(By::TieRoll),
        ),
        case(
            "Majority, Tie Roll: a clear majority is never rolled for",
            majority(TieRule::Roll),
            &p3,
            "ana",
            &[("ana", 4), ("bo", 4)],
            false,
            tie_second_of_two,
            Some(By::Majority),
        ),
        case(
            "Majority: a vote from outside the participants is not counted (it would have made two of three)",
            majority(TieRule::Leader),
            &p3,
            "ana",
            &[("zed", 1), ("ana", 1)],
            false,
            0,
            None,
        ),
        case(
            "Majority: votes from outside the participants never count, at the limit either",
            majority(TieRule::Leader),
            &p3,
            "ana",
            &[("zed", 1), ("yan", 1), ("bo", 2)],
            true,
            0,
            Some(By::Majority),
        ),
        case(
            "Majority: a changed vote moves the count: two of three after bo changes to the dory",
            majority(TieRule::Leader),
            &p3,
            "ana",
            &[("bo", 1), ("cy", 2), ("bo", 2)],
            false,
            0,
            Some(By::Majority),
        ),
        case(
            "Majority: a changed vote breaks what would have been a majority",
            majority(TieRule::Leader),
            &p3,
            "ana",
            &[("bo", 1), ("cy", 1), ("cy", 3)],
            false,
            0,
            None,
        ),
        case(
            "Majority: the order of the votes does not matter (the tie above, cast the other way round)",
            majority(TieRule::Leader),
            &p4,
            "cy",
            &[("di", 1), ("cy", 3), ("bo", 3), ("ana", 1)],
            true,
            0,
            Some(By::TieLeader),
        ),
        // Roll.
        case(
            "Roll: waits until every participant has voted",
            roll,
            &p3,
            "ana",
            &[("ana", 1), ("bo", 2)],
            false,
            7,
            None,
        ),
        case(
            "Roll: every participant voted; each rolls 1 + draw(seed, k) mod 100, k their place among the voters in join order",
            roll,
            &p3,
            "ana",
            &[("cy", 3), ("ana", 1), ("bo", 2)],
            false,
            7,
            Some(By::Roll),
        ),
        case(
            "Roll: the same ballot, another seed: the second voter rolls highest",
            roll,
            &p3,
            "ana",
            &[("ana", 1), ("bo", 2), ("cy", 3)],
            false,
            second_voter_wins,
            Some(By::Roll),
        ),
        case(
            "Roll: at the time limit the voters roll; k counts only the voters (cy is voter 1)",
            timed_roll,
            &p3,
            "ana",
            &[("cy", 3), ("ana", 1)],
            true,
            7,
            Some(By::Roll),
        ),
        case(
            "Roll: at the time limit with no vote, nothing is decided",
            timed_roll,
            &p3,
            "ana",
            &[],
            true,
            7,
            None,
        ),
        case(
            "Roll: an equal highest roll goes to the earlier joiner",
            roll,
            &p2,
            "ana",
            &[("bo", 2), ("ana", 1)],
            false,
            equal_two,
            Some(By::Roll),
        ),
        case(
            "Roll: an equal highest roll between the later two goes to the earlier of them",
            roll,
            &p3,
            "ana",
            &[("ana", 1), ("bo", 2), ("cy", 3)],
            false,
            equal_highest_late,
            Some(By::Roll),
        ),
        case(
            "Roll: voters who picked the same response still roll each",
            roll,
            &p3,
            "cy",
            &[("ana", 4), ("bo", 4), ("cy", 1)],
            false,
            11,
            Some(By::Roll),
        ),
        case(
            "Roll: a vote from outside the participants neither rolls nor counts toward everyone",
            roll,
            &p2,
            "ana",
            &[("zed", 3), ("ana", 1)],
            false,
            7,
            None,
        ),
        case(
            "Roll: one participant: their vote, with their roll",
            roll,
            &vec!["ana"],
            "ana",
            &[("ana", 2)],
            false,
            3,
            Some(By::Roll),
        ),
        case(
            "Roll: a changed vote, only the latest is rolled for",
            roll,
            &p2,
            "ana",
            &[("ana", 1), ("bo", 2), ("ana", 4)],
            false,
            9,
            Some(By::Roll),
        ),
        // All.
        case(
            "All: every participant for the same response",
            all,
            &p3,
            "ana",
            &[("ana", 2), ("bo", 2), ("cy", 2)],
            false,
            0,
            Some(By::Unanimous),
        ),
        case(
            "All: one dissent and nothing is decided",
            all,
            &p3,
            "ana",
            &[("ana", 2), ("bo", 2), ("cy", 1)],
            false,
            0,
            None,
        ),
        case(
            "All: one missing vote and nothing is decided",
            all,
            &p3,
            "ana",
            &[("ana", 2), ("bo", 2)],
            false,
            0,
            None,
        ),
        case(
            "All: no time limit; expiry decides nothing",
            all,
            &p3,
            "ana",
            &[("ana", 2), ("bo", 2)],
            true,
            0,
            None,
        ),
        case(
            "All: a changed vote makes it unanimous",
            all,
            &p3,
            "ana",
            &[("ana", 2), ("bo", 2), ("cy", 1), ("cy", 2)],
            false,
            0,
            Some(By::Unanimous),
        ),
        case(
            "All: a dissent from outside the participants does not count",
            all,
            &p2,
            "ana",
            &[("ana", 3), ("zed", 1), ("bo", 3)],
            false,
            0,
            Some(By::Unanimous),
        ),
        case(
            "All: one participant",
            all,
            &vec!["ana"],
            "ana",
            &[("ana", 1)],
            false,
            0,
            Some(By::Unanimous),
        ),
    ]
}

/// The latest vote of each player, in the order each first voted.
fn latest_votes(cast: &[(&'static str, u32)]) -> Vec<(&'static str, u32)> {
    let mut votes: Vec<(&'static str, u32)> = Vec::new();
    for &(player, r) in cast {
        match votes.iter_mut().find(|(p, _)| *p == player) {
            Some(vote) => vote.1 = r,
            None => votes.push((player, r)),
        }
    }
    votes
}

fn ballot_vectors() -> Value {
    let (graph, diagnostics) = build_conversation("Boats", BALLOT);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let response = |i: u32| format!("Boats_r{i}");
    let find = |i: u32| graph.find(&response(i)).expect("a response");
    let cases: Vec<Value> = ballot_cases()
        .iter()
        .map(|c| {
            let votes = latest_votes(&c.cast);
            let passed: Vec<(&str, VertexId)> = votes.iter().map(|&(p, r)| (p, find(r))).collect();
            let decision = ballot::decide(
                &graph,
                &c.rule,
                &c.participants,
                c.leader,
                &passed,
                c.expired,
                c.seed,
            );
            assert_eq!(decision.as_ref().map(|d| d.by), c.by, "{}", c.why);
            let vote_list = |list: &[(&str, u32)]| {
                list.iter()
                    .map(|&(p, r)| json!({ "player": p, "response": response(r) }))
                    .collect::<Vec<_>>()
            };
            let mut out = json!({
                "why": c.why,
                "rule": rule_json(&c.rule),
                "participants": c.participants,
                "leader": c.leader,
                "votes": vote_list(&votes),
                "expired": c.expired,
                "seed": c.seed.to_string(),
                "decision": decision_json(&graph, decision.as_ref()),
            });
            if votes.len() != c.cast.len() {
                out["cast"] = json!(vote_list(&c.cast));
            }
            out
        })
        .collect();
    let seeds = [0, 1, 7, 42, 0x9E37_79B9_7F4A_7C15, u64::MAX];
    let draws: Vec<Value> = seeds
        .iter()
        .flat_map(|&seed| {
            (0..4).map(move |k| {
                json!({
                    "seed": seed.to_string(),
                    "k": k,
                    "draw": ballot::draw(seed, k).to_string(),
                    "roll": ballot::roll(seed, k),
                })
            })
        })
        .collect();
    let text = {
        let mut d = Vec::new();
        let file =
            canonical::parse_conversation("Boats.json", BALLOT.as_bytes(), &mut d).expect("parses");
        canonical::to_json(&banter_dialogue::layers::merge("Boats", &file, &[], &mut d))
    };
    json!({
        "conversation": text,
        "line": "Boats",
        "draws": draws,
        "cases": cases,
    })
}

#[test]
fn ballot_vectors_are_current_and_replay() {
    let vectors = ballot_vectors();
    let cases = vectors["cases"].as_array().expect("cases");
    assert!(cases.len() >= 40, "{} ballot cases", cases.len());
    // Every way to decide, and null, appears.
    let by: std::collections::BTreeSet<&str> = cases
        .iter()
        .map(|c| c["decision"]["by"].as_str().unwrap_or("null"))
        .collect();
    let every: std::collections::BTreeSet<&str> = DecidedBy::VARIANTS
        .iter()
        .map(|&b| <&str>::from(b))
        .chain(["null"])
        .collect();
    assert_eq!(by, every);
    bless_or_check("ballots.json", &vectors);
    // Replay from the JSON alone, as a client would.
    for d in vectors["draws"].as_array().expect("draws") {
        let seed: u64 = d["seed"].as_str().expect("seed").parse().expect("u64");
        let k = d["k"].as_u64().expect("k");
        assert_eq!(
            d["draw"].as_str(),
            Some(ballot::draw(seed, k).to_string().as_str())
        );
    }
    let text = vectors["conversation"].as_str().expect("conversation");
    let (graph, _) = build_conversation("Boats", text);
    for c in cases {
        let spec = ChoiceSpec {
            mode: c["rule"]["Mode"].as_str().and_then(|m| {
                ChoiceMode::VARIANTS
                    .iter()
                    .copied()
                    .find(|&v| <&str>::from(v) == m)
            }),
            time_limit: c["rule"]["TimeLimit"].as_u64().map(|s| s as u32),
            tie: c["rule"]["Tie"].as_str().and_then(|t| {
                TieRule::VARIANTS
                    .iter()
                    .copied()
                    .find(|&v| <&str>::from(v) == t)
            }),
        };
        let names = |v: &Value| -> Vec<String> {
            v.as_array()
                .expect("list")
                .iter()
                .map(|s| s.as_str().expect("name").to_owned())
                .collect()
        };
        let participants = names(&c["participants"]);
        let participants: Vec<&str> = participants.iter().map(String::as_str).collect();
        let votes: Vec<(String, VertexId)> = c["votes"]
            .as_array()
            .expect("votes")
            .iter()
            .map(|v| {
                let r = graph
                    .find(v["response"].as_str().expect("response"))
                    .expect("vertex");
                (v["player"].as_str().expect("player").to_owned(), r)
            })
            .collect();
        let votes: Vec<(&str, VertexId)> = votes.iter().map(|(p, r)| (p.as_str(), *r)).collect();
        let decision = ballot::decide(
            &graph,
            &spec.rule(),
            &participants,
            c["leader"].as_str().expect("leader"),
            &votes,
            c["expired"].as_bool().expect("expired"),
            c["seed"].as_str().expect("seed").parse().expect("u64"),
        );
        assert_eq!(
            decision_json(&graph, decision.as_ref()),
            c["decision"],
            "{}",
            c["why"]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Shared walks (PROTOCOL.md sections 17.2 and 17.5): each participant's client following the
// group's walk, with its own facts.

/// A shared conversation for the rules of following: a response only some participants are
/// shown (`Pier_r3`, `has(FerryPass)`; `Midway_r3`, `coins >= 100`), node actions on the lines
/// the group is shown (each participant accepts for themself), a node whose `Choice` rolls, a
/// quest check on a response, a response that ends the conversation.
const CROSSING: &str = r#"{
  "FirstNode": "Pier",
  "Speaker": "Wren",
  "Shared": { "Mode": "Majority", "TimeLimit": 20, "Tie": "Leader" },
  "Pier": { "Text": "Two boats today. Which will it be?", "Responses": [
    { "Text": "The little skiff.", "NextNode": "Skiff",
      "Actions": [ { "Type": "ChooseRideBoat", "QuestId": "Crossing" } ] },
    { "Text": "The big barge.", "NextNode": "Barge" },
    { "Text": "I've a pass for the fast boat.", "Conditions": "has(FerryPass)", "NextNode": "Fast",
      "Actions": [ { "Type": "TrackQuest", "QuestId": "Crossing" } ] },
    { "Text": "Not today.", "Actions": [ { "Type": "OpenShop", "Shop": "BaitStall" } ] } ] },
  "Skiff": { "Text": "Room for two, if nobody rocks it.", "NextNode": "Midway",
    "Actions": [ { "Type": "AcceptQuest", "QuestId": "Crossing" } ] },
  "Barge": { "Text": "Slow and steady it is.", "NextNode": "Midway",
    "Actions": [ { "Type": "AcceptQuest", "QuestId": "Crossing" } ] },
  "Fast": { "Text": "Hold on to your hats!", "NextNode": "Midway" },
  "Midway": { "Text": "Halfway. Who rows?", "Choice": { "Mode": "Roll", "TimeLimit": 15 }, "Responses": [
    { "Text": "I'll row.", "NextNode": "Shore" },
    { "Text": "You row, Wren.", "NextNode": "Shore" },
    { "Text": "I'll pay extra for the motor.", "Conditions": "coins >= 100", "NextNode": "Shore",
      "Actions": [ { "Type": "OpenShop", "Shop": "Motor" } ] } ] },
  "Shore": { "Text": "Land ho. Got your ticket stub?", "Responses": [
    { "Text": "Here it is.",
      "Actions": [ { "Type": "CheckQuest", "QuestId": "Crossing", "SuccessNode": "Paid", "FailureNode": "Lost" } ] },
    { "Text": "Lost it.", "NextNode": "Lost" } ] },
  "Paid": { "Text": "Off you hop. Here's your change.", "Close": true,
    "Actions": [ { "Type": "CompleteQuest", "QuestId": "Crossing" } ] },
  "Lost": { "Text": "Next time, then.", "Close": true }
}"#;

/// Every action a walk has armed, with how many times (the client's walk never spends).
fn armed_json(graph: &DialogueGraph, walk: &banter_dialogue::Walk) -> Vec<Value> {
    graph
        .all_actions()
        .iter()
        .enumerate()
        .filter_map(|(i, a)| {
            let count = walk.armed(banter_dialogue::ActionIndex(i as u32));
            (count > 0).then(|| {
                json!({
                    "type": a.action_type.name(),
                    "payload": &*a.payload,
                    "on": graph.vertex(a.vertex).map(|v| v.name.to_string()).unwrap_or_default(),
                    "count": count,
                })
            })
        })
        .collect()
}

/// One participant: their client and the walk the server keeps for them.
struct Member {
    player: &'static str,
    facts: FactSheet,
    client: ClientWalk,
    server: banter_dialogue::Walk,
    present: bool,
}

/// The ballot open on the group's line.
struct OpenBallot {
    line: VertexId,
    rule: ChoiceRule,
    /// Each voter's latest vote, in the order they first voted.
    votes: Vec<(&'static str, VertexId)>,
    expired: bool,
    seed: u64,
}

/// What happens in a scenario, in order.
#[derive(Clone)]
enum Event {
    /// A participant picks a response: a vote.
    Vote(&'static str, &'static str),
    /// The ballot's time limit passes.
    Expire,
    /// A participant advances past a line (only the leader may).
    Advance(&'static str, &'static str),
    /// The server's jump (the leader's quest check's result).
    Jump(&'static str),
    /// A participant closes the conversation: they leave it.
    Close(&'static str),
    /// A party member joins where the group is.
    Join(&'static str, FactSheet),
}

/// A party walking one conversation: the server's side (each participant's walk, the leader's
/// deciding, the ballots) and every client's, recorded step by step.
struct Group<'g> {
    graph: &'g DialogueGraph,
    members: Vec<Member>,
    leader: &'static str,
    /// The line the group is shown (`None` while a jump is awaited, and after the end).
    line: Option<VertexId>,
    ballot: Option<OpenBallot>,
    /// Where the next ballot's seed is drawn from.
    seeds: u64,
    steps: Vec<Value>,
    out: Vec<Outgoing>,
}

impl Group<'_> {
    fn name(&self, v: VertexId) -> String {
        self.graph
            .vertex(v)
            .map(|v| v.name.to_string())
            .expect("a vertex of the graph")
    }

    fn record(&mut self, at: usize) -> Value {
        let g = self.graph;
        let m = &self.members[at];
        json!({
            "sends": wire(g, &mut self.out),
            "screen": screen(g, &m.client, &m.facts),
            "armed": armed_json(g, m.client.walk()),
        })
    }

    fn member(&self, player: &str) -> usize {
        self.members
            .iter()
            .position(|m| m.player == player)
            .expect("a participant")
    }

    fn present(&self) -> Vec<&'static str> {
        self.members
            .iter()
            .filter(|m| m.present)
            .map(|m| m.player)
            .collect()
    }

    fn open_ballot(&mut self) {
        self.ballot = None;
        let Some(line) = self.line else { return };
        let has_responses = self.graph.outputs(line).iter().any(|&r| {
            self.graph
                .vertex(r)
                .is_some_and(|v| v.kind == VertexKind::Response)
        });
        let Some(rule) = self.graph.choice_rule(line).filter(|_| has_responses) else {
            return;
        };
        self.seeds = ballot::draw(self.seeds, 1);
        self.ballot = Some(OpenBallot {
            line,
            rule,
            votes: Vec::new(),
            expired: false,
            seed: self.seeds,
        });
    }

    /// `message` to every present participant but `except`, each applying it with `apply`;
    /// recorded with what each sends and shows after it. Each client's walk must stay the one
    /// the server keeps for that participant.
    fn deliver(
        &mut self,
        message: &banter_protocol::ServerMessage,
        except: Option<&str>,
        apply: impl Fn(&DialogueGraph, &mut Member, &mut Vec<Outgoing>) -> Result<(), WalkError>,
    ) {
        let mut after = serde_json::Map::new();
        for at in 0..self.members.len() {
            let m = &self.members[at];
            if !m.present || Some(m.player) == except {
                continue;
            }
            let mut out = std::mem::take(&mut self.out);
            apply(self.graph, &mut self.members[at], &mut out).expect("the client follows");
            self.out = out;
            let m = &self.members[at];
            assert_eq!(
                m.client.walk().reachable(),
                m.server.reachable(),
                "{}",
                m.player
            );
            assert_eq!(m.client.walk().awaits_jump(), m.server.awaits_jump());
            let record = self.record(at);
            after.insert(self.members[at].player.to_owned(), record);
        }
        self.steps
            .push(json!({ "message": message, "after": after }));
    }

    fn vote(&mut self, player: &'static str, response: &str) {
        let g = self.graph;
        let at = self.member(player);
        let m = &self.members[at];
        let result = find_named(g, &m.client, response)
            .map_err(banter_dialogue::SharedError::Walk)
            .and_then(|r| m.client.vote(g, r, &m.facts, &mut self.out).map(|()| r));
        let mut step = json!({
            "vote": { "player": player, "response": response },
            "sends": wire(g, &mut self.out),
        });
        match result {
            Err(e) => {
                step["refused"] = json!(e.code().name());
                self.steps.push(step);
            }
            Ok(r) => {
                self.steps.push(step);
                let ballot = self.ballot.as_mut().expect("a ballot takes the vote");
                assert_eq!(g.line_of(r), Some(ballot.line));
                match ballot.votes.iter_mut().find(|(p, _)| *p == player) {
                    Some(vote) => vote.1 = r,
                    None => ballot.votes.push((player, r)),
                }
                self.evaluate();
            }
        }
    }

    fn expire(&mut self) {
        if let Some(ballot) = &mut self.ballot {
            ballot.expired = true;
        }
        self.steps.push(json!({ "expire": true }));
        self.evaluate();
    }

    fn evaluate(&mut self) {
        let Some(b) = &self.ballot else { return };
        let present = self.present();
        let Some(decision) = ballot::decide(
            self.graph,
            &b.rule,
            &present,
            self.leader,
            &b.votes,
            b.expired,
            b.seed,
        ) else {
            return;
        };
        let g = self.graph;
        let (line, votes, seed) = (b.line, b.votes.clone(), b.seed);
        let response = decision.response;
        let lead = self.member(self.leader);
        let leader = &mut self.members[lead];
        let shown = leader
            .server
            .group_choose(g, response, &leader.facts)
            .expect("the leader's walk takes the decision");
        let node = match shown {
            banter_dialogue::Shown::Line(n) => Some(n),
            _ => None,
        };
        for m in self
            .members
            .iter_mut()
            .filter(|m| m.present && m.player != self.leader)
        {
            m.server
                .follow_chosen(g, response, node, &m.facts)
                .expect("every walk follows the decision");
        }
        let rolled = matches!(decision.by, DecidedBy::Roll | DecidedBy::TieRoll);
        let message = banter_protocol::ServerMessage::Chosen {
            line: self.name(line),
            response: self.name(response),
            node: node.map(|n| self.name(n)),
            by: decision.by,
            votes: votes
                .iter()
                .map(|&(player, r)| banter_protocol::Vote {
                    player: player.to_owned(),
                    response: self.name(r),
                })
                .collect(),
            seed: rolled.then(|| seed.to_string()),
            rolls: decision
                .rolls
                .iter()
                .map(|(player, roll)| banter_protocol::Roll {
                    player: player.clone(),
                    roll: *roll,
                })
                .collect(),
        };
        self.deliver(&message, None, |g, m, out| {
            m.client.follow_chosen(g, response, node, &m.facts, out)
        });
        self.line = node;
        self.open_ballot();
    }

    fn advance(&mut self, player: &'static str, node: &str) {
        let g = self.graph;
        let at = self.member(player);
        let m = &self.members[at];
        let result = find_named(g, &m.client, node)
            .map_err(banter_dialogue::SharedError::Walk)
            .and_then(|l| {
                m.client
                    .propose_advance(g, l, &m.facts, &mut self.out)
                    .map(|()| l)
            });
        let mut step = json!({
            "advance": { "player": player, "node": node },
            "sends": wire(g, &mut self.out),
        });
        let line = match result {
            Err(e) => {
                step["refused"] = json!(e.code().name());
                self.steps.push(step);
                return;
            }
            Ok(line) => line,
        };
        self.steps.push(step);
        assert_eq!(player, self.leader);
        let leader = &mut self.members[at];
        let shown = leader
            .server
            .advance(g, line, &leader.facts)
            .expect("the server takes the leader's advance");
        let next = match shown {
            banter_dialogue::Shown::Line(n) => Some(n),
            _ => None,
        };
        for m in self
            .members
            .iter_mut()
            .filter(|m| m.present && m.player != player)
        {
            m.server
                .follow_advanced(g, next, &m.facts)
                .expect("every walk follows the advance");
        }
        let message = banter_protocol::ServerMessage::Advanced {
            line: self.name(line),
            node: next.map(|n| self.name(n)),
        };
        self.deliver(&message, None, |g, m, out| {
            m.client.follow_advanced(g, next, &m.facts, out)
        });
        self.line = next;
        self.open_ballot();
    }

    fn jump(&mut self, node: &str) {
        let g = self.graph;
        let target = g.find(node).expect("a jump target");
        for m in self.members.iter_mut().filter(|m| m.present) {
            m.server
                .jump_to(g, target, &m.facts)
                .expect("every walk takes the jump");
        }
        let message = banter_protocol::ServerMessage::Jump {
            node: node.to_owned(),
        };
        self.deliver(&message, None, |g, m, out| {
            m.client.jump(g, target, &m.facts, out)
        });
        self.line = Some(target);
        self.open_ballot();
    }

    fn roster(&self, joined: Option<&str>, left: Option<&str>) -> banter_protocol::ServerMessage {
        banter_protocol::ServerMessage::Participants {
            leader: self.leader.to_owned(),
            participants: self.present().iter().map(|p| (*p).to_owned()).collect(),
            joined: joined.map(str::to_owned),
            left: left.map(str::to_owned),
            reason: left.map(|_| banter_protocol::LeftReason::Closed),
        }
    }

    fn close(&mut self, player: &'static str) {
        let at = self.member(player);
        let m = &mut self.members[at];
        m.client.close(&mut self.out);
        m.server.close();
        m.present = false;
        let sends = wire(self.graph, &mut self.out);
        self.steps.push(json!({ "close": player, "sends": sends }));
        if let Some(ballot) = &mut self.ballot {
            ballot.votes.retain(|(p, _)| *p != player);
        }
        if self.leader == player
            && let Some(next) = self.present().first()
        {
            self.leader = next;
        }
        let leader = self.leader;
        let message = self.roster(None, Some(player));
        self.deliver(&message, None, |_, m, _| {
            m.client.set_leader(m.player == leader);
            Ok(())
        });
        self.evaluate();
    }

    fn join(&mut self, player: &'static str, facts: FactSheet) {
        let g = self.graph;
        let entry = self.line.expect("the group is on a line");
        let client =
            ClientWalk::open_shared(g, entry, &facts, false, &mut self.out).expect("opens");
        let (server, _) = banter_dialogue::Walk::open(g, entry, &facts).expect("opens");
        self.members.push(Member {
            player,
            facts: facts.clone(),
            client,
            server,
            present: true,
        });
        let record = self.record(self.members.len() - 1);
        self.steps.push(json!({
            "join": { "player": player, "entry": self.name(entry), "facts": facts },
            "sends": record["sends"],
            "screen": record["screen"],
            "armed": record["armed"],
        }));
        let message = self.roster(Some(player), None);
        self.deliver(&message, Some(player), |_, _, _| Ok(()));
    }
}

/// One scenario: `players` (the first leads) open `conversation` on `entry` together, then
/// `events` happen; every participant's sends, screen and armings recorded after each.
fn shared_scenario(
    name: &str,
    conversation: &str,
    text: &str,
    entry: &str,
    seed: u64,
    players: &[(&'static str, FactSheet)],
    events: Vec<Event>,
) -> Value {
    let (graph, diagnostics) = build_conversation(conversation, text);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let entry_id = graph.find(entry).expect("entry");
    let mut group = Group {
        graph: &graph,
        members: Vec::new(),
        leader: players[0].0,
        line: Some(entry_id),
        ballot: None,
        seeds: seed,
        steps: Vec::new(),
        out: Vec::new(),
    };
    let mut open = serde_json::Map::new();
    for (k, (player, facts)) in players.iter().enumerate() {
        let client = ClientWalk::open_shared(&graph, entry_id, facts, k == 0, &mut group.out)
            .expect("opens");
        let (server, _) = banter_dialogue::Walk::open(&graph, entry_id, facts).expect("opens");
        group.members.push(Member {
            player,
            facts: facts.clone(),
            client,
            server,
            present: true,
        });
        open.insert((*player).to_owned(), group.record(k));
    }
    group.open_ballot();
    for event in events {
        match event {
            Event::Vote(player, response) => group.vote(player, response),
            Event::Expire => group.expire(),
            Event::Advance(player, node) => group.advance(player, node),
            Event::Jump(node) => group.jump(node),
            Event::Close(player) => group.close(player),
            Event::Join(player, facts) => group.join(player, facts),
        }
    }
    json!({
        "name": name,
        "conversation": conversation,
        "entry": entry,
        "leader": players[0].0,
        "participants": players.iter().map(|(p, f)| json!({ "player": p, "facts": f })).collect::<Vec<_>>(),
        "open": open,
        "steps": group.steps,
    })
}

fn shared_walk_vectors() -> Value {
    let mut d = Vec::new();
    let file = canonical::parse_conversation("Crossing.json", CROSSING.as_bytes(), &mut d)
        .expect("parses");
    let text = canonical::to_json(&banter_dialogue::layers::merge(
        "Crossing",
        &file,
        &[],
        &mut d,
    ));
    assert!(d.is_empty(), "{d:?}");
    let sheet = |coins: i64, pass: bool| {
        let mut has = vec!["Dialogue.Talking"];
        if pass {
            has.push("FerryPass");
        }
        facts(&[], coins, &has)
    };
    let (ana, bo, cy, di) = (
        ("ana", sheet(0, false)),
        ("bo", sheet(150, true)),
        ("cy", sheet(20, true)),
        ("di", sheet(500, false)),
    );
    use Event::{Advance, Close, Expire, Join, Jump, Vote};
    let scenarios = vec![
        shared_scenario(
            "Crossing, three aboard: a response only two were shown wins by their votes and arms only theirs; only the leader advances; a roll at Midway; the quest check's response sends each participant's CheckQuest and the leader's result jumps everyone; the leader's last advance ends it for all",
            "Crossing",
            &text,
            "Pier",
            1,
            &[ana.clone(), bo.clone(), cy.clone()],
            vec![
                Vote("bo", "Pier_r3"),
                Vote("ana", "Pier_r3"),
                Vote("ana", "Pier_r2"),
                Vote("cy", "Pier_r3"),
                Vote("bo", "Pier_r1"),
                Advance("bo", "Fast"),
                Advance("ana", "Fast"),
                Vote("cy", "Midway_r3"),
                Vote("ana", "Midway_r1"),
                Vote("bo", "Midway_r3"),
                Vote("cy", "Midway_r2"),
                Vote("ana", "Shore_r1"),
                Vote("bo", "Shore_r1"),
                Vote("cy", "Shore_r2"),
                Jump("Paid"),
                Advance("ana", "Paid"),
                Vote("bo", "Shore_r2"),
            ],
        ),
        shared_scenario(
            "Crossing, two aboard: a changed vote, a tie at the time limit goes to the leader's vote; the node action of the line shown goes out from each client; a roll at the time limit among those who voted; a majority to a line that closes",
            "Crossing",
            &text,
            "Pier",
            2,
            &[bo.clone(), cy.clone()],
            vec![
                Vote("bo", "Pier_r1"),
                Vote("bo", "Pier_r2"),
                Vote("cy", "Pier_r1"),
                Expire,
                Advance("cy", "Barge"),
                Advance("bo", "Barge"),
                Vote("cy", "Pier_r1"),
                Vote("cy", "Midway_r2"),
                Expire,
                Vote("cy", "Shore_r2"),
                Vote("bo", "Shore_r2"),
                Advance("bo", "Lost"),
            ],
        ),
        shared_scenario(
            "Crossing, four aboard: the time limit passes with no vote and nothing is decided; the first vote after it decides; a response with no next line sends its actions and ends the conversation for everyone",
            "Crossing",
            &text,
            "Pier",
            3,
            &[ana.clone(), bo.clone(), cy.clone(), di.clone()],
            vec![Expire, Vote("di", "Pier_r4")],
        ),
        shared_scenario(
            "Crossing: the leader closes and the next participant leads; a member joins where the group is and is shown that line; the new leader advances; a roll among the three",
            "Crossing",
            &text,
            "Pier",
            4,
            &[ana.clone(), bo.clone(), cy.clone()],
            vec![
                Vote("ana", "Pier_r2"),
                Vote("cy", "Pier_r2"),
                Close("ana"),
                Join("di", di.1.clone()),
                Advance("cy", "Barge"),
                Advance("bo", "Barge"),
                Vote("bo", "Midway_r3"),
                Vote("cy", "Midway_r1"),
                Vote("di", "Midway_r3"),
                Vote("bo", "Shore_r2"),
                Vote("di", "Shore_r2"),
                Advance("bo", "Lost"),
            ],
        ),
    ];
    // The sample's party quest, as the server sends it (lockout lines merged in).
    let content = sample();
    let wren = canonical::to_json(content.merged.get("Wren").expect("the sample's Wren"));
    let mut scenarios = scenarios;
    scenarios.extend([
        shared_scenario(
            "Wren (sample content), three aboard: the motor launch only the two with coins see wins by their votes; each accepts the quest on the line shown; the crossing advances each one's objective; the check's response jumps everyone to the completion",
            "Wren",
            &wren,
            "Ferry_Greet",
            5,
            &[ana.clone(), bo.clone(), ("cy", sheet(120, false))],
            vec![
                Vote("ana", "Ferry_Greet_r3"),
                Vote("bo", "Ferry_Greet_r3"),
                Vote("ana", "Ferry_Greet_r1"),
                Vote("cy", "Ferry_Greet_r3"),
                Advance("ana", "Ferry_Launch"),
                Advance("ana", "Ferry_FarBar"),
                Vote("ana", "Ferry_Check_r1"),
                Vote("cy", "Ferry_Check_r1"),
                Jump("Ferry_Complete"),
                Advance("ana", "Ferry_Complete"),
            ],
        ),
        shared_scenario(
            "Wren (sample content), two aboard: a tie at the time limit goes to the leader's boat, the room for two; Ferry_Rowing's own Choice rolls for the oars; a majority to wait, then the end",
            "Wren",
            &wren,
            "Ferry_Greet",
            6,
            &[ana.clone(), bo.clone()],
            vec![
                Vote("ana", "Ferry_Greet_r1"),
                Vote("bo", "Ferry_Greet_r2"),
                Expire,
                Advance("ana", "Ferry_Skiff"),
                Vote("ana", "Ferry_Rowing_r1"),
                Vote("bo", "Ferry_Rowing_r2"),
                Advance("ana", "Ferry_FarBar"),
                Vote("ana", "Ferry_Check_r2"),
                Vote("bo", "Ferry_Check_r2"),
                Advance("ana", "Ferry_Wait"),
            ],
        ),
    ]);
    json!({ "conversations": { "Crossing": text, "Wren": wren }, "scenarios": scenarios })
}

/// Replays a shared-walk record from its JSON alone, as a client would: each participant's
/// client applies the server's messages and the player's own steps, and must send, show and
/// arm exactly what the record says.
fn replay_shared(vectors: &Value) {
    for scenario in vectors["scenarios"].as_array().expect("scenarios") {
        let label = scenario["name"].as_str().expect("name");
        let conversation = scenario["conversation"].as_str().expect("conversation");
        let text = vectors["conversations"][conversation]
            .as_str()
            .expect("content");
        let (graph, _) = build_conversation(conversation, text);
        let g = &graph;
        let entry = g
            .find(scenario["entry"].as_str().expect("entry"))
            .expect("entry");
        let leader = scenario["leader"].as_str().expect("leader");
        let mut out = Vec::new();
        let mut clients: BTreeMap<String, (ClientWalk, FactSheet)> = BTreeMap::new();
        let check = |clients: &BTreeMap<String, (ClientWalk, FactSheet)>,
                     player: &str,
                     out: &mut Vec<Outgoing>,
                     record: &Value| {
            let (client, facts) = &clients[player];
            assert_eq!(
                json!(wire(g, out)),
                record["sends"],
                "{label}: {player} sends"
            );
            assert_eq!(
                screen(g, client, facts),
                record["screen"],
                "{label}: {player} sees"
            );
            assert_eq!(
                json!(armed_json(g, client.walk())),
                record["armed"],
                "{label}: {player}"
            );
        };
        for p in scenario["participants"].as_array().expect("participants") {
            let player = p["player"].as_str().expect("player");
            let facts: FactSheet = serde_json::from_value(p["facts"].clone()).expect("facts");
            let client = ClientWalk::open_shared(g, entry, &facts, player == leader, &mut out)
                .expect("opens");
            clients.insert(player.to_owned(), (client, facts));
            check(&clients, player, &mut out, &scenario["open"][player]);
        }
        let vertex = |v: &Value| v.as_str().and_then(|n| g.find(n));
        for step in scenario["steps"].as_array().expect("steps") {
            let refused = step.get("refused").and_then(Value::as_str);
            if let Some(vote) = step.get("vote") {
                let player = vote["player"].as_str().expect("player");
                let (client, facts) = &clients[player];
                let result = find_named(g, client, vote["response"].as_str().expect("response"))
                    .map_err(banter_dialogue::SharedError::Walk)
                    .and_then(|r| client.vote(g, r, facts, &mut out));
                assert_eq!(
                    result.err().map(|e| e.code().name()),
                    refused,
                    "{label}: {step}"
                );
                assert_eq!(json!(wire(g, &mut out)), step["sends"], "{label}: {step}");
            } else if let Some(advance) = step.get("advance") {
                let player = advance["player"].as_str().expect("player");
                let (client, facts) = &clients[player];
                let result = find_named(g, client, advance["node"].as_str().expect("node"))
                    .map_err(banter_dialogue::SharedError::Walk)
                    .and_then(|l| client.propose_advance(g, l, facts, &mut out));
                assert_eq!(
                    result.err().map(|e| e.code().name()),
                    refused,
                    "{label}: {step}"
                );
                assert_eq!(json!(wire(g, &mut out)), step["sends"], "{label}: {step}");
            } else if let Some(player) = step.get("close").and_then(Value::as_str) {
                let (client, _) = clients.get_mut(player).expect("a participant");
                client.close(&mut out);
                assert_eq!(json!(wire(g, &mut out)), step["sends"], "{label}: {step}");
                clients.remove(player);
            } else if let Some(join) = step.get("join") {
                let player = join["player"].as_str().expect("player");
                let facts: FactSheet =
                    serde_json::from_value(join["facts"].clone()).expect("facts");
                let at = vertex(&join["entry"]).expect("entry");
                let client =
                    ClientWalk::open_shared(g, at, &facts, false, &mut out).expect("opens");
                clients.insert(player.to_owned(), (client, facts));
                check(&clients, player, &mut out, step);
            } else if let Some(message) = step.get("message") {
                let after = step["after"].as_object().expect("after");
                for (player, record) in after {
                    let (client, facts) = clients.get_mut(player).expect("a participant");
                    let result = match message["type"].as_str() {
                        Some("chosen") => client.follow_chosen(
                            g,
                            vertex(&message["response"]).expect("response"),
                            vertex(&message["node"]),
                            facts,
                            &mut out,
                        ),
                        Some("advanced") => {
                            client.follow_advanced(g, vertex(&message["node"]), facts, &mut out)
                        }
                        Some("jump") => {
                            client.jump(g, vertex(&message["node"]).expect("node"), facts, &mut out)
                        }
                        Some("participants") => {
                            client.set_leader(message["leader"].as_str() == Some(player.as_str()));
                            Ok(())
                        }
                        other => panic!("{label}: no such message {other:?}"),
                    };
                    assert_eq!(result, Ok(()), "{label}: {player} follows {message}");
                    check(&clients, player, &mut out, record);
                }
            } else {
                assert!(step.get("expire").is_some(), "{label}: {step}");
            }
        }
    }
}

#[test]
fn shared_walk_vectors_are_current_and_replay() {
    let vectors = shared_walk_vectors();
    let scenarios = vectors["scenarios"].as_array().expect("scenarios");
    // Every server message a client follows, and every refusal a participant's own step gets
    // only in a shared conversation.
    let steps: Vec<&Value> = scenarios
        .iter()
        .flat_map(|s| s["steps"].as_array().expect("steps"))
        .collect();
    let messages: std::collections::BTreeSet<&str> = steps
        .iter()
        .filter_map(|s| s["message"]["type"].as_str())
        .collect();
    assert_eq!(
        messages,
        std::collections::BTreeSet::from(["advanced", "chosen", "jump", "participants"])
    );
    let refused: std::collections::BTreeSet<&str> =
        steps.iter().filter_map(|s| s["refused"].as_str()).collect();
    for code in [
        "not_current",
        "not_leader",
        "not_reachable",
        "awaits_jump",
        "no_conversation",
    ] {
        assert!(
            refused.contains(code),
            "{code} in shared_walks.json: {refused:?}"
        );
    }
    bless_or_check("shared_walks.json", &vectors);
    replay_shared(&vectors);
}

/// Every vector file in `conformance/` has its section in the README, so a client author finds
/// what each one means.
#[test]
fn every_vector_file_is_documented_in_the_readme() {
    let readme = std::fs::read_to_string(conformance_dir().join("README.md"))
        .expect("conformance/README.md");
    let mut files: Vec<String> = std::fs::read_dir(conformance_dir())
        .expect("conformance folder")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    for file in files {
        assert!(
            readme.contains(&format!("## `{file}`")),
            "conformance/README.md has no section for {file}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Writing power (PROTOCOL.md section 10.1): variables, visits, once, line groups, greyed-out
// responses, step by step.

/// The conversation every writing-power scenario walks: a hub whose responses lead to each
/// feature and back.
const POWER: &str = r#"{
  "FirstNode": "Door",
  "Speaker": "Wren",
  "Door": { "Text": "The door creaks.", "NextNode": ["Back", "Welcome"] },
  "Back": { "Text": "Back again?", "Conditions": "opens >= 1", "NextNode": "Hub" },
  "Welcome": { "Text": "Welcome, stranger.", "Once": true, "NextNode": "Hub" },
  "Hub": { "Text": "What now?", "Responses": [
    { "Text": "Tell me a secret.", "Once": true, "NextNode": "Secret" },
    { "Text": "Buy the map.", "Conditions": "coins >= 100", "Disabled": "Needs 100 coins.",
      "Actions": [ { "Type": "SetVariable", "Variable": "HasMap", "Value": "true" } ], "NextNode": "Hub" },
    { "Text": "Chat.", "NextNode": { "Pick": "LeastRecent", "Among": ["Chat_Nets", "Chat_Gulls", "Chat_Tide"] } },
    { "Text": "Gossip.", "NextNode": { "Pick": "MostSpecific", "Among": ["Gossip_Plain", "Gossip_Map", "Gossip_Mood"] } },
    { "Text": "Dice.", "NextNode": { "Pick": "Weighted", "Among": [ { "Node": "Dice_Low", "Weight": 1 }, { "Node": "Dice_High", "Weight": 3 } ] } },
    { "Text": "Stories.", "NextNode": { "Pick": "First", "Among": ["Story_One", "Story_Two"], "Fallback": "Story_None" } },
    { "Text": "Leave.", "NextNode": "Bye" },
    { "Text": "Back so soon?", "Conditions": "visits(Hub) >= 3", "NextNode": "Hub" },
    { "Text": "Rumours.", "NextNode": { "Pick": "First", "Among": ["Rumour_Rich"] } },
    { "Text": "About those eels...", "Conditions": "visited(Secret) && $Mood != \"grim\"", "NextNode": "Hub" },
    { "Text": "First time here?", "Conditions": "visits(Hub) == 1", "NextNode": "Hub" } ] },
  "Secret": { "Text": "The eels can talk.", "NextNode": "Hub" },
  "Chat_Nets": { "Text": "Nets need mending.", "NextNode": "Hub" },
  "Chat_Gulls": { "Text": "Gulls are loud today.", "NextNode": "Hub" },
  "Chat_Tide": { "Text": "Tide's turning.", "NextNode": "Hub" },
  "Gossip_Plain": { "Text": "Nothing new.", "NextNode": "Hub" },
  "Gossip_Map": { "Text": "That map shows the eel caves.", "Conditions": "$HasMap", "NextNode": "Hub" },
  "Gossip_Mood": { "Text": "Sunny and you've mended nets? Rare.", "Conditions": "$Mood == \"sunny\" && $Nets >= 2", "NextNode": "Hub" },
  "Dice_Low": { "Text": "Snake eyes.", "NextNode": "Hub" },
  "Dice_High": { "Text": "Sixes!", "NextNode": "Hub" },
  "Story_One": { "Text": "Once, a whale.", "Once": true, "NextNode": "Hub" },
  "Story_Two": { "Text": "Twice, a squid.", "Once": true, "NextNode": "Hub" },
  "Story_None": { "Text": "I'm out of stories.", "NextNode": "Hub" },
  "Rumour_Rich": { "Text": "The rich ones buy maps.", "Conditions": "coins >= 500", "NextNode": "Hub" },
  "Bye": { "Text": "Fair winds.", "Close": true }
}"#;

/// A line screen with its greyed-out responses (the other screens as `client_walk.json`).
fn power_screen(graph: &DialogueGraph, walk: &ClientWalk, facts: &FactSheet) -> Value {
    let mut screen = screen(graph, walk, facts);
    if walk.screen() != Screen::Ended && screen.get("line").is_some() {
        let greyed: Vec<Value> = walk
            .greyed(graph, facts)
            .filter_map(|(r, reason)| {
                let name = graph.vertex(r)?.name.to_string();
                Some(json!({ "response": name, "text": reason }))
            })
            .collect();
        screen["greyed"] = json!(greyed);
    }
    screen
}

fn power_sheet(
    coins: i64,
    vars: &[(&str, banter_protocol::VarValue)],
    visits: &[(&str, u32)],
    last_seen: &[(&str, u64)],
    opens: u32,
    seed: u64,
) -> FactSheet {
    FactSheet {
        coins,
        has: vec!["Dialogue.Talking".to_owned()],
        vars: vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
        visits: visits.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
        last_seen: last_seen
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
        opens,
        seed: Some(seed),
        ..FactSheet::default()
    }
}

/// A scripted walk over [`POWER`], with the greyed-out responses on every line screen and
/// the visits the walk counted at the end.
fn power_scenario(name: &str, sheet: &FactSheet, inputs: Vec<(Value, Option<FactSheet>)>) -> Value {
    let (graph, diagnostics) = build_conversation("Power", POWER);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let (open, steps, walk) = play_scripted(&graph, "Door", sheet, inputs, power_screen);
    let counted: serde_json::Map<String, Value> = walk
        .walk()
        .counted()
        .iter()
        .filter_map(|c| Some((graph.vertex(c.vertex)?.name.to_string(), json!(c.count))))
        .collect();
    json!({
        "name": name,
        "conversation": "Power",
        "entry": "Door",
        "facts": sheet,
        "open": open,
        "steps": steps,
        "counted": counted,
    })
}

fn power_scenarios() -> Vec<Value> {
    use banter_protocol::VarValue::{Bool, Int, Text};
    let adv = |n: &str| (json!({ "advance": n }), None);
    let pick = |r: &str| (json!({ "choose": r }), None);
    let calm = [
        ("HasMap", Bool(false)),
        ("Mood", Text("calm".into())),
        ("Nets", Int(0)),
    ];
    let first = power_sheet(0, &calm, &[], &[], 0, 42);
    let mut rich = first.clone();
    rich.coins = 100;
    let mut mapped = rich.clone();
    mapped.vars.insert("HasMap".into(), Bool(true));
    let mut scenarios = vec![power_scenario(
        "a first visit: once line and response, greyed-out, every group's pick, a variable set",
        &first,
        vec![
            adv("Door"),
            adv("Welcome"),
            pick("Hub_r2"),
            pick("Hub_r1"),
            adv("Secret"),
            pick("Hub_r1"),
            pick("Hub_r3"),
            adv("Chat_Nets"),
            pick("Hub_r3"),
            adv("Chat_Gulls"),
            pick("Hub_r6"),
            adv("Story_One"),
            pick("Hub_r6"),
            adv("Story_Two"),
            pick("Hub_r6"),
            adv("Story_None"),
            pick("Hub_r5"),
            (json!({ "advance": "Dice_Low" }), None),
            (json!({ "advance": "Dice_High" }), None),
            pick("Hub_r5"),
            pick("Hub_r4"),
            (json!({ "choose": "Hub_r2" }), Some(rich.clone())),
            (json!({ "choose": "Hub_r4" }), Some(mapped.clone())),
            pick("Hub_r8"),
            pick("Hub_r9"),
            pick("Hub_r7"),
        ],
    )];
    let returning = power_sheet(
        0,
        &[
            ("HasMap", Bool(false)),
            ("Mood", Text("sunny".into())),
            ("Nets", Int(2)),
        ],
        &[
            ("Welcome", 1),
            ("Hub_r1", 1),
            ("Story_One", 1),
            ("Chat_Nets", 2),
            ("Chat_Gulls", 1),
            ("Chat_Tide", 1),
            ("Secret", 1),
        ],
        &[("Chat_Nets", 5), ("Chat_Gulls", 9), ("Chat_Tide", 7)],
        1,
        7,
    );
    let mut grim = returning.clone();
    grim.vars.insert("Mood".into(), Text("grim".into()));
    scenarios.push(power_scenario(
        "a return: opens, stored visits, last seen and spent once lines",
        &returning,
        vec![
            adv("Door"),
            adv("Back"),
            pick("Hub_r1"),
            pick("Hub_r3"),
            adv("Chat_Nets"),
            pick("Hub_r3"),
            adv("Chat_Tide"),
            pick("Hub_r3"),
            adv("Chat_Gulls"),
            pick("Hub_r3"),
            adv("Chat_Nets"),
            pick("Hub_r4"),
            adv("Gossip_Mood"),
            pick("Hub_r6"),
            adv("Story_Two"),
            pick("Hub_r10"),
            (json!({ "choose": "Hub_r10" }), Some(grim)),
            pick("Hub_r5"),
            pick("Hub_r7"),
            adv("Bye"),
        ],
    ));
    for seed in [0u64, 1, 2, 3, 18_446_744_073_709_551_615] {
        let sheet = power_sheet(0, &calm, &[("Welcome", 1)], &[], 1, seed);
        // Picked again from the line after it (`R` only grows): each pick a new draw.
        let mut inputs = vec![adv("Door"), adv("Back")];
        for _ in 0..6 {
            inputs.push(pick("Hub_r5"));
        }
        inputs.push(pick("Hub_r7"));
        scenarios.push(power_scenario(
            &format!("weighted picks from seed {seed}"),
            &sheet,
            inputs,
        ));
    }
    scenarios
}

fn power_condition_vectors() -> Vec<Value> {
    use banter_protocol::VarValue::{Bool, Int, Text};
    let sheet = power_sheet(
        50,
        &[
            ("Met", Bool(true)),
            ("Shy", Bool(false)),
            ("Nets", Int(3)),
            ("Mood", Text("sunny".into())),
        ],
        &[("Greet", 2), ("Greet_r1", 1)],
        &[],
        4,
        1,
    );
    let cases: [(&str, &str); 34] = [
        ("$Met", "a bool variable is a condition"),
        ("!$Shy", "negated"),
        ("$Met && !$Shy", "joined like any condition"),
        ("$Nets >= 3", "an int variable is a value"),
        ("3 == $Nets", "on either side"),
        ("$Nets > coins", "compared with a counter"),
        (r#"$Mood == "sunny""#, "a string compared with a literal"),
        (r#"$Mood != "grim""#, "!= on strings"),
        (r#""sunny" == $Mood"#, "the literal on the left"),
        (r#"$Mood == """#, "the empty literal"),
        ("$Absent", "an absent variable reads as false"),
        ("$Absent == 0", "as 0 compared with an integer"),
        (r#"$Absent == """#, "as \"\" compared with a string"),
        ("$Absent < 1", "absent is 0 under every comparison"),
        ("visits(Greet) == 2", "visits from the sheet"),
        ("visits(Nowhere) == 0", "absent visits are 0"),
        ("visited(Greet_r1)", "a response picked"),
        ("!visited(Nowhere)", "never shown"),
        ("opens == 4", "opens from the sheet"),
        ("opens > visits(Greet)", "opens is a value like a counter"),
        (
            "has(opens) || !has(visits)",
            "the keywords are names inside has(...)",
        ),
        (
            "$Met==true",
            "error: a bool variable is not a value, and true is not a value",
        ),
        ("$ Met", "error: no space after $"),
        ("$", "error: $ alone"),
        ("$1x", "error: a variable name starts with a letter or _"),
        (r#"$Mood == "sun"#, "error: an unterminated string"),
        (
            r#"$Mood == "a\"b""#,
            "error: no escapes: the backslash is refused",
        ),
        (r#"$Mood == 'sunny'"#, "error: strings are double-quoted"),
        (r#""a" "#, "error: a string alone is not a condition"),
        ("visits() > 1", "error: visits names a line"),
        (
            "visited(Greet) > 1",
            "error: visited is a condition, not a value",
        ),
        ("visits(Greet)", "error: visits is a value, not a condition"),
        ("opens", "error: opens is a value"),
        (
            "$Mood == \"0123456789012345678901234567890123456789012345678901234567890123X\"",
            "error: a string literal is at most 64 bytes",
        ),
    ];
    cases
        .into_iter()
        .map(|(condition, why)| {
            let mut case = json!({ "why": why, "condition": condition, "facts": sheet });
            match Condition::parse(condition) {
                Ok(c) => {
                    assert!(!why.starts_with("error"), "{condition}: parsed but {why}");
                    case["holds"] = json!(c.eval(&sheet));
                }
                Err(_) => {
                    assert!(why.starts_with("error"), "{condition}: refused but {why}");
                    case["error"] = json!(true);
                }
            }
            case
        })
        .collect()
}

fn writing_power_vectors() -> Value {
    json!({
        "conversations": { "Power": canonical::to_json(&{
            let mut diagnostics = Vec::new();
            let file = canonical::parse_conversation("Power.json", POWER.as_bytes(), &mut diagnostics)
                .expect("parses");
            banter_dialogue::layers::merge("Power", &file, &[], &mut diagnostics)
        }) },
        "conditions": power_condition_vectors(),
        "scenarios": power_scenarios(),
    })
}

#[test]
fn writing_power_vectors_are_current() {
    let vectors = writing_power_vectors();
    let refused: std::collections::BTreeSet<&str> = vectors["scenarios"]
        .as_array()
        .expect("scenarios")
        .iter()
        .flat_map(|s| s["steps"].as_array().expect("steps"))
        .filter_map(|step| step["refused"].as_str())
        .collect();
    assert!(refused.contains("response_disabled"), "{refused:?}");
    assert!(refused.contains("condition_failed"), "{refused:?}");
    bless_or_check("writing_power.json", &vectors);
}
