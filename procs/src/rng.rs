//! Deterministic randomness for tests that pick moments and sizes at random: a run is
//! repeated by setting `WARD_TEST_SEED` to the seed it printed.

/// SplitMix64: small, deterministic, good enough to pick kill moments.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform-ish in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `$WARD_TEST_SEED`, or one made from the clock. Printed by the caller so a failure can be
/// repeated.
pub fn seed() -> u64 {
    match std::env::var("WARD_TEST_SEED") {
        Ok(s) => s.trim().parse().unwrap_or_else(|e| panic!("WARD_TEST_SEED={s:?}: {e}")),
        Err(_) => clock_seed(),
    }
}

/// A seed from the clock and the process id: different in every run and every process.
pub fn clock_seed() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    now.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32)
}
