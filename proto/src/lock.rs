//! Lock queues: contender names and the order that decides who holds.
//!
//! A lock is a directory of ephemeral-sequential children; the one with the lowest sequence
//! suffix holds it. Ordering uses only the 10-digit suffix ZooKeeper appends, so Ward's
//! contenders queue in one order with those of other ZooKeeper recipes in the same
//! directory. Ward names its own contenders
//!
//! ```text
//! ward-<session:016x>-<tag:016x>__lock__<sequence:010>
//! ```
//!
//! The session and the client's tag let a retried acquire find the contender an earlier,
//! unanswered attempt created (no orphans after a lost reply), and the `__lock__` infix and
//! suffix match kazoo's lock recipe, so kazoo waiters see Ward contenders in the queue.

use crate::ids::SessionId;

const INFIX: &str = "__lock__";
const SEQ_DIGITS: usize = 10;

/// The name a contender gets before the server appends the sequence suffix.
pub fn contender_prefix(session: SessionId, tag: u64) -> String {
    format!("ward-{:016x}-{tag:016x}{INFIX}", session.0)
}

/// The session and tag of a Ward contender name.
pub fn parse_contender(name: &str) -> Option<(SessionId, u64)> {
    let rest = name.strip_prefix("ward-")?;
    let (head, seq) = rest.rsplit_once(INFIX)?;
    sequence(seq)?;
    let (session, tag) = head.split_once('-')?;
    let session = u64::from_str_radix(session, 16).ok()?;
    let tag = u64::from_str_radix(tag, 16).ok()?;
    Some((SessionId(session), tag))
}

/// The sequence suffix of a node name, if it ends in one (10 ASCII digits).
pub fn sequence(name: &str) -> Option<u64> {
    let start = name.len().checked_sub(SEQ_DIGITS)?;
    let digits = name.get(start..)?;
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        digits.parse().ok()
    } else {
        None
    }
}

/// Contenders among `children` in queue order (lowest sequence first). Children without a
/// sequence suffix are not contenders.
pub fn queue<'a>(children: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut contenders: Vec<(u64, &str)> =
        children.into_iter().filter_map(|name| sequence(name).map(|seq| (seq, name))).collect();
    contenders.sort_unstable();
    contenders.into_iter().map(|(_, name)| name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_order_by_suffix_only() {
        let name = format!("{}0000000042", contender_prefix(SessionId(0xabc), 7));
        assert_eq!(name, "ward-0000000000000abc-0000000000000007__lock__0000000042");
        assert_eq!(parse_contender(&name), Some((SessionId(0xabc), 7)));
        assert_eq!(parse_contender("0f1e__lock__0000000001"), None);
        let kazoo = "8a6c0d2f__lock__0000000041";
        let curator = "_c_2d5e-lock-0000000043";
        assert_eq!(queue([name.as_str(), curator, "not-a-contender", kazoo]), vec![kazoo, &name, curator]);
        assert_eq!(sequence("x12345"), None);
    }
}
