//! Leader election across processes (G12): one leader at a time while leaders die.

use crate::harness::*;
use std::collections::HashSet;
use std::time::Instant;

const CANDIDATES: usize = 5;
const KILLS: usize = 4;

/// Waits for one of the live candidates to print "lead <token>"; returns (index, token,
/// when it was read). Any other line is a failure ("lost" while nobody was killed).
async fn next_leader(candidates: &mut [Contender], alive: &[bool]) -> (usize, u64, Instant) {
    wait_for("a candidate leads", DEADLINE, || {
        let mut found = None;
        for (i, candidate) in candidates.iter_mut().enumerate().filter(|(i, _)| alive[*i]) {
            if let Some(line) = candidate.try_line() {
                let token = match line.text.split_whitespace().collect::<Vec<_>>()[..] {
                    ["lead", token] => token.parse::<u64>().expect("token"),
                    _ => panic!("candidate {i} said {:?}", line.text),
                };
                assert!(found.is_none(), "two candidates took the lead at once");
                found = Some((i, token, line.at));
            }
        }
        async move { found }
    })
    .await
}

// G12: exactly one leader at a time across 5 candidate processes while leaders are
// killed; the next takes over within session timeout + 1 s (measured, bounded generously).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_while_leaders_are_killed() {
    bounded(async {
        let server = ServerProcess::start_with(&["--min-session-timeout-ms", "500"]);
        let addr = server.addr_str();
        let record = RecordFile::new("election");
        let file = record.path_str();
        let mut candidates: Vec<Contender> = (0..CANDIDATES)
            .map(|i| {
                let id = format!("c{i}");
                let args = ["elect", "--server", &addr, "--dir", "/elect", "--file", &file, "--id", &id];
                // Short, so that takeovers are quick, but long enough that a leader on a
                // loaded machine does not lose its session to one slow pong (at 4/5 of it).
                Contender::spawn(&[&args[..], &["--session-timeout-ms", "3000", "--tick-ms", "10"]].concat())
            })
            .collect();
        for candidate in &mut candidates {
            assert_eq!(candidate.next_line().await.text, "campaigning");
        }
        let mut alive = [true; CANDIDATES];
        let (mut leader, mut token, _) = next_leader(&mut candidates, &alive).await;
        let observer = connect(&addr).await;
        wait_until("every candidate is queued", DEADLINE, || async {
            observer.get_children("/elect").await.expect("ls").len() == CANDIDATES
        })
        .await;
        let mut takeovers = Vec::new();
        for round in 1..=KILLS {
            wait_until("the leader ticks", DEADLINE, || async { record.read().contains(&format!("tick {token}\n")) })
                .await;
            let current = observer.election("/elect").leader().await.expect("leader").expect("a leader");
            assert_eq!((current.data, current.token), (format!("c{leader}").into_bytes(), token));
            let killed_at = Instant::now();
            candidates[leader].kill9();
            alive[leader] = false;
            let (next, next_token, at) = next_leader(&mut candidates, &alive).await;
            takeovers.push(at - killed_at);
            println!(
                "election round {round}: c{leader} killed, c{next} leads after {:?} (session timeout 3 s)",
                at - killed_at
            );
            assert!(next_token > token);
            (leader, token) = (next, next_token);
        }
        wait_until("the last leader ticks", DEADLINE, || async { record.read().contains(&format!("tick {token}\n")) })
            .await;
        for candidate in &mut candidates {
            candidate.kill9();
        }
        for (i, candidate) in candidates.iter_mut().enumerate() {
            if let Some(line) = candidate.try_line() {
                panic!("c{i} said {:?} after the last takeover", line.text);
            }
        }
        println!("election takeovers: {takeovers:?}");

        // The record: leads in increasing token order, and no tick of an older leader after
        // a newer one took over (killed leaders write nothing after they die).
        let mut leads = Vec::new();
        let mut ticks = 0;
        for line in record.read().lines() {
            match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["lead", t, id] => {
                    let t: u64 = t.parse().expect("token");
                    if let Some(&(last, _)) = leads.last() {
                        assert!(t > last, "lead {t} after lead {last}");
                    }
                    leads.push((t, id.to_string()));
                }
                ["tick", t] => {
                    let t: u64 = t.parse().expect("token");
                    assert_eq!(leads.last().map(|l| l.0), Some(t), "tick {t} while another leads");
                    ticks += 1;
                }
                _ => panic!("unknown record line {line:?}"),
            }
        }
        assert_eq!(leads.len(), KILLS + 1, "{leads:?}");
        assert_eq!(leads.iter().map(|l| &l.1).collect::<HashSet<_>>().len(), KILLS + 1, "{leads:?}");
        assert!(ticks > KILLS, "every leader ticked");
    })
    .await
}
