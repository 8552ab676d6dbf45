//! A body split at random chunk boundaries, for the streaming tests (the
//! robots meta rewriter, the Markdown converter, the body decoder): a
//! proxy hands them a body in whatever pieces the network made, and their
//! output must not depend on where those fell. The boundaries come from a
//! seeded generator so that a failure, which prints the seed, can be
//! replayed (as lol-html's `tests/harness/input.rs` does).

/// Draws chunk boundaries: splitmix64, small and seedable, which is good
/// enough to pick boundaries.
#[derive(Clone, Debug)]
pub struct Cuts {
    seed: u64,
    state: u64,
}

impl Cuts {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Cuts {
        Cuts { seed, state: seed }
    }

    /// A generator started from the environment variable `var` when it is
    /// set (to replay a failed run, whose message names the seed), else
    /// from `default`.
    pub fn from_env(var: &str, default: u64) -> Cuts {
        let seed = match std::env::var(var) {
            Ok(s) => s.trim().parse().unwrap_or_else(|e| panic!("{var}={s:?}: {e}")),
            Err(_) => default,
        };
        Cuts::new(seed)
    }

    /// The seed it started from, for a failure message.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// `n` bytes from the same generator: data that does not compress.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    /// In `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Ascending cut offsets into `len` bytes. Empty chunks are allowed (a
    /// proxy may hand one on); chunk sizes are drawn up to a limit that
    /// itself varies, so that some splittings are fine and some coarse.
    pub fn random(&mut self, len: usize) -> Vec<usize> {
        let limit = [1, 2, 3, 8, 64, 700, 4096, len.max(1)][self.below(8)];
        let mut cuts = Vec::new();
        let mut at = 0;
        while at < len {
            let step = if self.below(50) == 0 { 0 } else { 1 + self.below(limit) };
            at = (at + step).min(len);
            cuts.push(at);
        }
        cuts.pop();
        cuts
    }

    /// The body whole, one byte at a time, then split at random `n` times.
    pub fn splittings(&mut self, len: usize, n: usize) -> Vec<Vec<usize>> {
        let mut all = vec![Vec::new(), (1..len).collect()];
        all.extend((0..n).map(|_| self.random(len)));
        all
    }
}

/// A seed that differs from run to run (the clock's nanoseconds), for a
/// test that explores new boundaries each time.
pub fn clock_seed() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
}

/// The pieces of `input` cut at `cuts` (ascending offsets, at most
/// `input.len()`): one more piece than there are cuts.
pub fn pieces<'a>(input: &'a [u8], cuts: &'a [usize]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let ends = cuts.iter().copied().chain(std::iter::once(input.len()));
    ends.scan(0, move |start, end| {
        let piece = &input[*start..end];
        *start = end;
        Some(piece)
    })
}

/// `cuts` for a failure message, the first 400 when there are more.
pub fn describe(cuts: &[usize]) -> String {
    if cuts.len() > 400 {
        format!("{} cuts: {:?} ...", cuts.len(), &cuts[..400])
    } else {
        format!("{cuts:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_ascending_within_the_body_and_replayable() {
        for seed in 0..200 {
            let cuts = Cuts::new(seed).random(1000);
            assert!(cuts.windows(2).all(|w| w[0] <= w[1]) && cuts.iter().all(|c| *c <= 1000), "seed {seed}");
            assert_eq!(Cuts::new(seed).random(1000), cuts, "seed {seed}");
        }
        assert_eq!(Cuts::new(1).random(0), Vec::<usize>::new());
    }

    #[test]
    fn pieces_put_back_together_are_the_body() {
        let body = b"<html><head></head><body>x</body></html>";
        let mut cuts = Cuts::new(7);
        for c in cuts.splittings(body.len(), 20) {
            assert_eq!(pieces(body, &c).count(), c.len() + 1);
            assert_eq!(pieces(body, &c).collect::<Vec<_>>().concat(), body, "{c:?}");
        }
        assert_eq!(pieces(b"abc", &[1, 1, 3]).collect::<Vec<_>>(), [&b"a"[..], b"", b"bc", b""]);
    }
}
