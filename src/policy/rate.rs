//! A per sender→recipient rate limiter (token bucket), so one peer cannot flood another and
//! two agents trading acknowledgements run out of budget.
//!
//! Each (sender, recipient) pair has a bucket of [`RateConfig::burst`] tokens that refills
//! continuously at `burst` tokens per [`RateConfig::window_s`]. A message takes one token.
//! Default: 20 messages per 60 s per pair.
//!
//! Pure: the caller passes `now` as c2c time, **epoch float seconds**. A clock that steps
//! back refills nothing (it never adds tokens); a non-finite `now` is refused.
//!
//! Memory: at most [`RateConfig::max_pairs`] buckets. A full bucket is the same as no
//! bucket, so full ones are dropped first; if none is full the least recently used one is
//! dropped (that pair starts again with a full bucket: the bound trades a little precision
//! for memory).

use std::collections::HashMap;

/// Limiter settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateConfig {
    /// Messages a pair may send at once, and per window (default 20).
    pub burst: u32,
    /// The refill window in seconds (default 60.0).
    pub window_s: f64,
    /// Most pairs tracked (default 4 096).
    pub max_pairs: usize,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            burst: 20,
            window_s: 60.0,
            max_pairs: 4_096,
        }
    }
}

/// A [`RateConfig`] value out of range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid rate limit: {0}")]
pub struct InvalidRateConfig(
    /// What is wrong.
    pub &'static str,
);

impl RateConfig {
    /// Check the bounds: `burst` ≥ 1, `window_s` finite and in (0, 1 day], `max_pairs` ≥ 1.
    pub fn validate(self) -> Result<Self, InvalidRateConfig> {
        if self.burst == 0 {
            return Err(InvalidRateConfig("burst must be at least 1"));
        }
        // Below a tenth of a second the bucket refills faster than anyone can send: no limit.
        if !self.window_s.is_finite() || self.window_s < 0.1 || self.window_s > 86_400.0 {
            return Err(InvalidRateConfig(
                "window_s must be a number of seconds from 0.1 to 86400",
            ));
        }
        if self.max_pairs == 0 {
            return Err(InvalidRateConfig("max_pairs must be at least 1"));
        }
        Ok(self)
    }
}

/// The limiter's answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateDecision {
    /// Send; one token was taken.
    Allowed,
    /// Refuse; a token will be available in `retry_after_s` seconds (infinite when `now`
    /// was not a finite number).
    Limited {
        /// Seconds until the next token.
        retry_after_s: f64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    /// Epoch seconds of the last refill.
    at_s: f64,
    /// Use counter value of the last check (for eviction).
    used: u64,
}

/// Token buckets per (sender, recipient) pair.
#[derive(Debug)]
pub struct RateLimiter {
    config: RateConfig,
    buckets: HashMap<(String, String), Bucket>,
    tick: u64,
}

impl RateLimiter {
    /// A limiter with `config` (checked with [`RateConfig::validate`]).
    pub fn new(config: RateConfig) -> Result<Self, InvalidRateConfig> {
        Ok(RateLimiter {
            config: config.validate()?,
            buckets: HashMap::new(),
            tick: 0,
        })
    }

    /// Number of pairs tracked.
    pub fn pairs(&self) -> usize {
        self.buckets.len()
    }

    fn rate_per_s(&self) -> f64 {
        f64::from(self.config.burst) / self.config.window_s
    }

    fn refilled(&self, b: &Bucket, now_s: f64) -> f64 {
        let elapsed = (now_s - b.at_s).max(0.0);
        (b.tokens + elapsed * self.rate_per_s()).min(f64::from(self.config.burst))
    }

    /// Take one token for a message from `sender` to `recipient` at `now_s` (epoch seconds).
    pub fn check(&mut self, sender: &str, recipient: &str, now_s: f64) -> RateDecision {
        if !now_s.is_finite() {
            return RateDecision::Limited {
                retry_after_s: f64::INFINITY,
            };
        }
        self.tick += 1;
        let key = (sender.to_string(), recipient.to_string());
        if !self.buckets.contains_key(&key) && self.buckets.len() >= self.config.max_pairs {
            self.evict(now_s);
        }
        let burst = f64::from(self.config.burst);
        let tick = self.tick;
        let current = self
            .buckets
            .get(&key)
            .map(|b| (self.refilled(b, now_s), b.at_s.max(now_s)))
            .unwrap_or((burst, now_s));
        let rate = self.rate_per_s();
        let (tokens, at_s) = current;
        let (tokens, decision) = if tokens >= 1.0 {
            (tokens - 1.0, RateDecision::Allowed)
        } else {
            (
                tokens,
                RateDecision::Limited {
                    retry_after_s: (1.0 - tokens) / rate,
                },
            )
        };
        self.buckets.insert(
            key,
            Bucket {
                tokens,
                at_s,
                used: tick,
            },
        );
        decision
    }

    fn evict(&mut self, now_s: f64) {
        let burst = f64::from(self.config.burst);
        let before = self.buckets.len();
        let full: Vec<(String, String)> = self
            .buckets
            .iter()
            .filter(|(_, b)| self.refilled(b, now_s) >= burst)
            .map(|(k, _)| k.clone())
            .collect();
        for k in full {
            self.buckets.remove(&k);
        }
        if self.buckets.len() < before {
            return;
        }
        if let Some(k) = self
            .buckets
            .iter()
            .min_by_key(|(_, b)| b.used)
            .map(|(k, _)| k.clone())
        {
            self.buckets.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(burst: u32, window_s: f64, max_pairs: usize) -> RateLimiter {
        RateLimiter::new(RateConfig {
            burst,
            window_s,
            max_pairs,
        })
        .unwrap()
    }

    #[test]
    fn default_is_twenty_per_minute() {
        let mut r = RateLimiter::new(RateConfig::default()).unwrap();
        let t0 = 1_700_000_000.0;
        for _ in 0..20 {
            assert_eq!(r.check("a", "b", t0), RateDecision::Allowed);
        }
        match r.check("a", "b", t0) {
            RateDecision::Limited { retry_after_s } => {
                assert!((retry_after_s - 3.0).abs() < 1e-9, "{retry_after_s}")
            }
            d => panic!("{d:?}"),
        }
        // Other pairs, including the reverse direction, have their own budget.
        assert_eq!(r.check("b", "a", t0), RateDecision::Allowed);
        assert_eq!(r.check("a", "c", t0), RateDecision::Allowed);
        // One token comes back every 3 s.
        assert_eq!(r.check("a", "b", t0 + 3.0), RateDecision::Allowed);
        assert!(matches!(
            r.check("a", "b", t0 + 3.0),
            RateDecision::Limited { .. }
        ));
        // A full window refills the burst, not more.
        for _ in 0..20 {
            assert_eq!(r.check("a", "b", t0 + 1000.0), RateDecision::Allowed);
        }
        assert!(matches!(
            r.check("a", "b", t0 + 1000.0),
            RateDecision::Limited { .. }
        ));
    }

    #[test]
    fn ack_ping_pong_runs_out() {
        let mut r = limiter(5, 60.0, 16);
        let mut sent = 0;
        for i in 0..100 {
            let (s, d) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
            if r.check(s, d, 100.0 + f64::from(i) * 0.1) == RateDecision::Allowed {
                sent += 1;
            }
        }
        assert!(sent <= 12, "{sent}");
    }

    #[test]
    fn clock_going_back_adds_nothing() {
        let mut r = limiter(2, 10.0, 16);
        assert_eq!(r.check("a", "b", 100.0), RateDecision::Allowed);
        assert_eq!(r.check("a", "b", 100.0), RateDecision::Allowed);
        assert!(matches!(
            r.check("a", "b", 50.0),
            RateDecision::Limited { .. }
        ));
        assert!(matches!(
            r.check("a", "b", 100.0),
            RateDecision::Limited { .. }
        ));
        assert_eq!(r.check("a", "b", 105.0), RateDecision::Allowed);
    }

    #[test]
    fn non_finite_now_is_refused() {
        let mut r = limiter(2, 10.0, 16);
        for now in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                r.check("a", "b", now),
                RateDecision::Limited { retry_after_s } if retry_after_s.is_infinite()
            ));
        }
        assert_eq!(r.pairs(), 0);
    }

    #[test]
    fn bad_config_is_rejected() {
        for (burst, window_s, max_pairs) in [
            (0, 60.0, 1),
            (1, 0.0, 1),
            (1, -1.0, 1),
            (1, f64::NAN, 1),
            (1, f64::INFINITY, 1),
            (1, 1e9, 1),
            (1, 60.0, 0),
        ] {
            assert!(RateLimiter::new(RateConfig {
                burst,
                window_s,
                max_pairs
            })
            .is_err());
        }
    }

    #[test]
    fn memory_is_bounded() {
        let mut r = limiter(3, 60.0, 8);
        for i in 0..1000 {
            r.check(&format!("s{i}"), "b", 10.0);
            assert!(r.pairs() <= 8);
        }
        // A busy pair that keeps being used survives eviction of idle ones.
        let mut r = limiter(3, 60.0, 4);
        for _ in 0..3 {
            r.check("hot", "b", 10.0);
        }
        for i in 0..50 {
            r.check(&format!("s{i}"), "b", 10.0);
            r.check("hot", "b", 10.0);
        }
        assert!(matches!(
            r.check("hot", "b", 10.0),
            RateDecision::Limited { .. }
        ));
    }
}
