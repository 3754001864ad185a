use super::{push, Finding, Verdict};

/// What one member's admin listener said at the end (`GET /digest`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberDigest {
    pub member: String,
    /// (zxid, digest line), or why it did not answer.
    pub read: Result<(u64, String), String>,
}

/// Convergence: after healing, every member reaches the same zxid with the same state
/// digest. `digests` is the last round read (the runner reads until the zxids agree or it
/// gives up).
pub fn convergence(digests: &[MemberDigest]) -> Verdict {
    let mut verdict = Verdict::new("convergence");
    verdict.operations = digests.len();
    let lines: Vec<String> = digests
        .iter()
        .map(|d| match &d.read {
            Ok((_, line)) => format!("{}: {line}", d.member),
            Err(why) => format!("{}: {why}", d.member),
        })
        .collect();
    if digests.iter().any(|d| d.read.is_err()) {
        verdict.undecided.push(format!("not every member answered: {}", lines.join("; ")));
        return verdict;
    }
    let reads: Vec<&(u64, String)> = digests.iter().filter_map(|d| d.read.as_ref().ok()).collect();
    let same_zxid = reads.windows(2).all(|w| w[0].0 == w[1].0);
    let same_digest = reads.windows(2).all(|w| w[0].1 == w[1].1);
    if !same_zxid {
        push(&mut verdict, Finding::new("the members did not reach one zxid after healing", lines));
    } else if !same_digest {
        push(&mut verdict, Finding::new("members at the same zxid hold different states", lines));
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(member: &str, zxid: u64, digest: &str) -> MemberDigest {
        MemberDigest {
            member: member.into(),
            read: Ok((zxid, format!("zxid {zxid} nodes 3 sessions 1 digest {digest}"))),
        }
    }

    #[test]
    fn members_agree_or_the_difference_is_caught() {
        assert!(convergence(&[read("a", 9, "ff"), read("b", 9, "ff")]).passed());
        let apart = convergence(&[read("a", 9, "ff"), read("b", 9, "fe")]);
        assert!(apart.violations.iter().any(|f| f.what.contains("different states")), "{apart:?}");
        let behind = convergence(&[read("a", 9, "ff"), read("b", 8, "ff")]);
        assert!(behind.violations.iter().any(|f| f.what.contains("one zxid")), "{behind:?}");
        let silent = MemberDigest { member: "c".into(), read: Err("connection refused".into()) };
        let silent = convergence(&[read("a", 9, "ff"), silent]);
        assert!(!silent.passed() && silent.violations.is_empty(), "{silent:?}");
    }
}
