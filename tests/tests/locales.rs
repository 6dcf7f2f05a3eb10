//! The protocol speaks the player's language, and authority does not depend on it: the same
//! conversation walked in two locales gets the same accepts, refusals, payloads and rewards;
//! only the text (and so the content hash) differs.

use banter_e2e::*;
use banter_protocol::{ActionType, ErrorCode, ServerMessage};

const NEAR_PIM: [f64; 3] = [-640.0, 2.0, 910.0];

/// Connects in `locale` (none: the source) and spawns next to Pim; the welcome too.
async fn player_in(server: &TestServer, device: &str, locale: Option<&str>) -> (Client, Welcome) {
    let token = server.login(device).await;
    let query = match locale {
        Some(locale) => format!("token={token}&locale={locale}"),
        None => format!("token={token}"),
    };
    let (mut client, welcome) = server.connect_query_welcomed(&query).await;
    client.move_to(NEAR_PIM).await.expect("spawned");
    (client, welcome)
}

/// Talks to Pim; the content sent with `opened`, in the locale served.
async fn pims_content(client: &mut Client) -> String {
    let opened = client.talk("Pim").await.expect("talk");
    opened.content.expect("content")
}

/// Every answer the server gave, with the text-dependent fields (content and hash) blanked,
/// and the content sent with `opened`.
#[derive(Default)]
struct Transcript {
    verdicts: Vec<String>,
    contents: Vec<String>,
}

impl Transcript {
    fn record(&mut self, answer: Result<Reply, Refused>) {
        let messages = match answer {
            Ok(reply) => reply.messages,
            Err(refused) => {
                self.verdicts.push(format!("refused {:?}", refused.code));
                return;
            }
        };
        for message in messages {
            let blanked = match message {
                ServerMessage::Opened {
                    conversation,
                    npc,
                    speaker,
                    entry,
                    content,
                    facts,
                    ..
                } => {
                    self.contents.extend(content);
                    ServerMessage::Opened {
                        conversation,
                        npc,
                        speaker,
                        entry,
                        hash: String::new(),
                        content: None,
                        facts,
                        shared: None,
                    }
                }
                other => other,
            };
            self.verdicts.push(format!("{blanked:?}"));
        }
    }
}

/// Pim's whole quest, with refusals along the way: the same script in any locale.
async fn walk_pims_quest(client: &mut Client) -> Transcript {
    let mut t = Transcript::default();
    t.record(client.talk_reply("Pim").await);
    // Refused: not shown yet, and a payload the conversation did not arm.
    t.record(client.advance("PimsTideTale_Tale").await);
    t.record(client.action(ActionType::AcceptQuest, "LostReel").await);
    t.record(client.choose("PimsTideTale_Greet_r1").await);
    t.record(client.action(ActionType::AcceptQuest, "PimsTideTale").await);
    t.record(client.action(ActionType::AcceptQuest, "PimsTideTale").await);
    t.record(client.advance("PimsTideTale_Tale").await);
    t.record(
        client
            .action(ActionType::AdvanceObjective, PIMS_OBJECTIVE)
            .await,
    );
    t.record(client.advance("PimsTideTale_Ending").await);
    t.record(client.action(ActionType::CompleteQuest, PIMS_QUEST).await);
    t.record(client.action(ActionType::CompleteQuest, PIMS_QUEST).await);
    t.record(client.close_conversation().await);
    t
}

#[tokio::test]
async fn the_same_conversation_in_two_locales_gets_the_same_verdicts_and_rewards() {
    let server = TestServer::start().await;
    let (mut source, welcome) = player_in(&server, "device-locale-src", None).await;
    assert_eq!(welcome.locale, "en");
    let locales = &welcome.locales;
    assert!(locales.iter().any(|l| l == "ja"), "{locales:?}");
    assert!(locales.iter().any(|l| l == "en-XA"), "{locales:?}");
    let (mut japanese, welcome) = player_in(&server, "device-locale-ja", Some("ja-JP")).await;
    assert_eq!(welcome.locale, "ja", "ja-JP falls back to ja");

    let in_source = walk_pims_quest(&mut source).await;
    let in_japanese = walk_pims_quest(&mut japanese).await;
    assert_eq!(in_source.verdicts, in_japanese.verdicts);
    assert!(
        in_source
            .verdicts
            .iter()
            .any(|v| v.contains("QuestCompleted")),
        "the quest paid: {:#?}",
        in_source.verdicts
    );
    assert!(
        in_source
            .verdicts
            .iter()
            .filter(|v| v.starts_with("refused"))
            .count()
            >= 3,
        "{:#?}",
        in_source.verdicts
    );
    // The text differs: the Japanese player read Japanese.
    let (src, ja) = (&in_source.contents[0], &in_japanese.contents[0]);
    assert_ne!(src, ja);
    assert!(
        ja.chars().any(|c| ('\u{3040}'..='\u{30ff}').contains(&c)),
        "kana in the Japanese content: {ja}"
    );
}

#[tokio::test]
async fn a_locale_can_be_changed_and_a_bad_one_is_refused_with_its_code() {
    let server = TestServer::start().await;
    let (mut client, _) = player_in(&server, "device-locale-switch", None).await;
    client
        .set_locale("not a tag")
        .await
        .expect_refused(ErrorCode::BadLocale);
    // The pseudo-locale is served like any other.
    assert_eq!(client.set_locale("en-XA").await.as_deref(), Ok("en-XA"));
    let content = pims_content(&mut client).await;
    assert!(content.contains("[") && content.contains('é'), "{content}");

    // A bad tag at the upgrade is a 400, and no session.
    let token = server.login("device-locale-bad").await;
    let refused = server
        .connect_query(&format!("token={token}&locale=%20nope%20"))
        .await
        .err()
        .expect("refused");
    assert!(refused.to_string().contains("400"), "{refused}");
}

#[tokio::test]
async fn a_broken_string_table_fails_a_reload_and_the_served_text_stays() {
    let dir = content_copy("content-locales");
    let server = TestServer::start_serving(&dir, |_| {}).await;
    let table = dir.join("locales/ja.po");
    let good = std::fs::read_to_string(&table).expect("ja.po");
    std::fs::write(&table, format!("{good}\nmsgid \"unterminated\n")).expect("break it");
    let (status, body) = server.reload_content().await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.contains("ja.po"),
        "the refusal names the table: {body}"
    );
    // Still served in Japanese, from the version in force.
    let (mut client, _) = player_in(&server, "device-locale-reload", Some("ja")).await;
    assert!(pims_content(&mut client).await.contains("ヤドカリ"));
}

#[tokio::test]
async fn a_line_carries_its_clip_in_the_locale_served() {
    let dir = content_copy("content-voice");
    let pim = std::fs::read_to_string(dir.join("dialogue/base/Pim.json")).expect("Pim");
    let at = pim.find("\"PimsTideTale_Greet\": {").expect("the greeting");
    let rest = &pim[at..];
    let start = rest.find("\"LineId\": \"").expect("its id") + "\"LineId\": \"".len();
    let id = &rest[start..start + rest[start..].find('"').expect("end")];
    let clip = format!("voice/ja/{}.wav", id.replace(':', "-"));
    std::fs::create_dir_all(dir.join("voice")).expect("voice folder");
    std::fs::write(
        dir.join("voice/manifest.json"),
        format!("{{ \"{clip}\": 2350 }}"),
    )
    .expect("manifest");
    let server = TestServer::start_serving(&dir, |_| {}).await;

    let (mut japanese, _) = player_in(&server, "device-voice-ja", Some("ja")).await;
    let content = pims_content(&mut japanese).await;
    let (graph, diagnostics) = banter_dialogue::build_conversation("Pim", &content);
    assert!(diagnostics.iter().all(|d| !d.is_error()), "{diagnostics:?}");
    let greet = graph.find("PimsTideTale_Greet").expect("the greeting");
    assert_eq!(graph.vertex(greet).and_then(|v| v.voice_millis), Some(2350));
    assert!(content.contains(&clip), "{content}");

    // The source has no clip for it: nothing to sync to.
    let (mut english, _) = player_in(&server, "device-voice-en", None).await;
    let content = pims_content(&mut english).await;
    assert!(!content.contains("\"Voice\""), "{content}");
}

/// The id of node `node` in a Pim.json text.
fn line_id_of(pim: &str, node: &str) -> String {
    let at = pim.find(&format!("\"{node}\": {{")).expect("the node");
    let rest = &pim[at..];
    let start = rest.find("\"LineId\": \"").expect("its id") + "\"LineId\": \"".len();
    rest[start..start + rest[start..].find('"').expect("end")].to_owned()
}

#[tokio::test]
async fn pt_br_reads_pt_br_then_pt_then_the_source() {
    let dir = content_copy("content-fallback");
    let pim = std::fs::read_to_string(dir.join("dialogue/base/Pim.json")).expect("Pim");
    let (content, _) = banter_dialogue::check::load_and_check(&dir);
    let source = |node: &str| content.merged["Pim"].nodes[node].text.clone();
    let table = |tag: &str, entries: &[(&str, &str)]| {
        let mut po = format!("msgid \"\"\nmsgstr \"\"\n\"Language: {tag}\\n\"\n");
        for (node, translation) in entries {
            po.push_str(&format!(
                "\nmsgctxt \"{}\"\nmsgid \"{}\"\nmsgstr \"{translation}\"\n",
                line_id_of(&pim, node),
                source(node)
            ));
        }
        po
    };
    let (br, pt) = ("Psiu! Tô contando ermitões.", "Adeus! Não pises ninguém.");
    std::fs::write(
        dir.join("locales/pt-BR.po"),
        table("pt-BR", &[("Pim_Hello", br)]),
    )
    .expect("pt-BR.po");
    std::fs::write(
        dir.join("locales/pt.po"),
        table(
            "pt",
            &[
                ("Pim_Hello", "Chiu! Estou a contar ermitões."),
                ("Pim_Bye", pt),
            ],
        ),
    )
    .expect("pt.po");
    let server = TestServer::start_serving(&dir, |_| {}).await;

    let (mut client, welcome) = player_in(&server, "device-locale-pt-br", Some("pt-BR")).await;
    assert_eq!(welcome.locale, "pt-BR");
    let content = pims_content(&mut client).await;
    let (graph, _) = banter_dialogue::build_conversation("Pim", &content);
    let text = |node: &str| {
        graph
            .find(node)
            .and_then(|v| graph.vertex(v))
            .map(|v| v.text.to_string())
            .expect("the node")
    };
    assert_eq!(text("Pim_Hello"), br, "from pt-BR");
    assert_eq!(text("Pim_Bye"), pt, "from pt");
    assert_eq!(text("Pim_Ines"), source("Pim_Ines"), "from the source");
}

#[tokio::test]
async fn set_locale_and_the_upgrade_take_the_same_bcp47_tags_and_name_the_locale_served() {
    let server = TestServer::start().await;
    // The pseudo-locale with an extension is served, and named, `en-XA`: at the upgrade and
    // after `set_locale` alike.
    let (mut client, welcome) =
        player_in(&server, "device-locale-bcp47", Some("en-xa-u-nu-latn")).await;
    assert_eq!(welcome.locale, "en-XA");
    assert!(pims_content(&mut client).await.contains('['), "pseudo text");
    client.close_conversation().await.expect("closed");
    for (asked, served) in [
        ("ja-JP", "ja"),
        ("EN-xa-U-NU-LATN", "en-XA"),
        ("pt-BR", "en"),
        ("ar-u-nu-arab", "ar"),
    ] {
        assert_eq!(
            client.set_locale(asked).await.as_deref(),
            Ok(served),
            "{asked}"
        );
    }
    // What the upgrade refuses with `400`, `set_locale` refuses with `bad_locale`, and the
    // locale in force stays.
    for bad in ["pt_BR", "en-US-GB", "ja-", "en-u", "x-private", "ja JP"] {
        client
            .set_locale(bad)
            .await
            .expect_refused(ErrorCode::BadLocale);
    }
    let reply = client.fetch_conversation("Pim").await.expect("fetched");
    let (_, content) = reply.fetched();
    assert!(
        content
            .chars()
            .any(|c| ('\u{0600}'..='\u{06ff}').contains(&c)),
        "still Arabic after the refusals: {content}"
    );
}

#[tokio::test]
async fn a_conversation_resumed_in_another_locale_carries_that_locales_hash() {
    let server = TestServer::start().await;
    let token = server.login("device-locale-resume").await;
    let (mut english, welcome) = server.connect_welcomed(&token).await;
    english.move_to(NEAR_PIM).await.expect("spawned");
    let opened = english.talk("Pim").await.expect("talk");
    english
        .choose("PimsTideTale_Greet_r1")
        .await
        .expect("chosen");
    drop(english);

    let (mut japanese, welcome_ja) = server
        .connect_query_welcomed(&format!("token={token}&locale=ja"))
        .await;
    assert_eq!(welcome_ja.locale, "ja");
    let reply = japanese
        .resume(&welcome.resume_token)
        .await
        .expect("resumed");
    let (_, resumed_hash) = reply.resumed().expect("resumed");
    assert_ne!(
        resumed_hash, opened.hash,
        "the Japanese text has its own hash"
    );
    // fetch_conversation answers that hash's content: the open conversation in Japanese.
    let reply = japanese.fetch_conversation("Pim").await.expect("fetched");
    let (hash, content) = reply.fetched();
    assert_eq!(hash, resumed_hash);
    assert!(content.contains("ヤドカリ"), "{content}");
    // The walk is where it was: the armed AcceptQuest is still armed.
    japanese
        .action(ActionType::AcceptQuest, "PimsTideTale")
        .await
        .expect("still armed");
}
