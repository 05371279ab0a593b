//! Where a rank learns its rank, the job size and the job id: from `tca run` (`TCA_RANK`,
//! `TCA_SIZE`, `TCA_JOB_ID`), or from the MPI launcher it was started by (Open MPI:
//! `OMPI_COMM_WORLD_RANK` / `OMPI_COMM_WORLD_SIZE`; MPICH's Hydra and other PMI launchers:
//! `PMI_RANK` / `PMI_SIZE`). Under an MPI launcher the job id is the launcher's namespace
//! (`PMIX_NAMESPACE`) when it has one, else the parent process id: all ranks of one job on a
//! host are children of the same launcher process.
//!
//! How waits behave: `TCA_TIMEOUT_MS` bounds every wait; `TCA_SPIN_US` is how long a wait
//! busy-polls before it sleeps. Unset, the spin is [`DEFAULT_SPIN`], or 0 when the job's
//! ranks outnumber the CPUs they may run on (decided at `tcaInit`, see
//! [`crate::ShmFabric::with_config`]). A spin longer than the timeout is rejected: the timeout
//! always wins.

use std::time::Duration;
use tca_proto::{TcaError, MAX_NODES};

/// Default heap bytes per rank (`TCA_SHM_BYTES`): the pages are only backed once touched.
pub const DEFAULT_HEAP_BYTES: u64 = 256 << 20;
/// Default timeout of every wait (`TCA_TIMEOUT_MS`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default busy-poll time before a wait sleeps (`TCA_SPIN_US`) when every rank has a CPU:
/// longer than a 4 MiB copy takes here, so that a ping-pong of large messages does not pay a
/// futex wake-up (and the liveness checks of the sleep phase) per message; 50 us cost the
/// 4 MiB DMA ping-pong 6% (docs/shm-fabric.md).
pub const DEFAULT_SPIN: Duration = Duration::from_millis(1);

/// How one rank joins a job on the shm fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// This rank (TCA node id), `< size`.
    pub rank: u16,
    /// Ranks in the job, `<= 16`.
    pub size: u16,
    /// Job id: names the segments `tca-<job>-<rank>`; only `[A-Za-z0-9_.-]`.
    pub job: String,
    /// Heap bytes of this rank's segment (tcaMalloc memory and descriptor tables).
    pub heap_bytes: u64,
    /// Longest time any wait blocks before it fails with [`TcaError::Timeout`].
    pub timeout: Duration,
    /// Busy-poll time of a wait before it sleeps on a futex (`TCA_SPIN_US`); `None`: the
    /// fabric decides at init ([`DEFAULT_SPIN`], or no spinning when ranks outnumber CPUs).
    pub spin: Option<Duration>,
}

/// A configuration the environment does not give, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The code a C caller sees.
    pub error: TcaError,
    /// What is wrong, in words.
    pub detail: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.error, self.detail)
    }
}

impl std::error::Error for ConfigError {}

fn bad(error: TcaError, detail: impl Into<String>) -> ConfigError {
    ConfigError { error, detail: detail.into() }
}

impl Config {
    /// Reads the configuration through `var` (normally `std::env::var`).
    ///
    /// # Errors
    /// [`TcaError::NotInitialized`] when no launcher variables are set or they are malformed;
    /// [`TcaError::TooManyNodes`] for more than 16 ranks; [`TcaError::InvalidNode`] when the
    /// rank is not below the size; [`TcaError::NotInitialized`] when `TCA_SPIN_US` exceeds
    /// `TCA_TIMEOUT_MS`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let num = |name: &str| -> Result<Option<u64>, ConfigError> {
            match var(name) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| bad(TcaError::NotInitialized, format!("{name}={v:?} is not a number"))),
            }
        };
        let pairs =
            [("TCA_RANK", "TCA_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE")];
        let mut found = None;
        for (r, s) in pairs {
            if let (Some(rank), Some(size)) = (num(r)?, num(s)?) {
                found = Some((r, rank, size));
                break;
            }
        }
        let Some((source, rank, size)) = found else {
            return Err(bad(
                TcaError::NotInitialized,
                "no rank in the environment: start the program with `tca run -n N` or mpirun",
            ));
        };
        if size > u64::from(MAX_NODES) {
            return Err(bad(
                TcaError::TooManyNodes,
                format!("{size} ranks; a TCA sub-cluster has at most {MAX_NODES} nodes"),
            ));
        }
        if size == 0 || rank >= size {
            return Err(bad(TcaError::InvalidNode, format!("rank {rank} of {size} ranks")));
        }
        let job = if source == "TCA_RANK" {
            var("TCA_JOB_ID").ok_or_else(|| bad(TcaError::NotInitialized, "TCA_RANK set but no TCA_JOB_ID"))?
        } else if let Some(ns) = var("PMIX_NAMESPACE") {
            format!("pmix-{ns}")
        } else {
            format!("ppid-{}", crate::sys::getppid())
        };
        let job: String =
            job.chars().map(|c| if c.is_ascii_alphanumeric() || "_.-".contains(c) { c } else { '_' }).collect();
        if job.is_empty() || job.len() > 200 {
            return Err(bad(TcaError::NotInitialized, "job id empty or too long"));
        }
        let heap_bytes = num("TCA_SHM_BYTES")?.unwrap_or(DEFAULT_HEAP_BYTES);
        let timeout = num("TCA_TIMEOUT_MS")?.map(Duration::from_millis).unwrap_or(DEFAULT_TIMEOUT);
        let spin = num("TCA_SPIN_US")?.map(Duration::from_micros);
        if let Some(s) = spin.filter(|s| *s > timeout) {
            return Err(bad(
                TcaError::NotInitialized,
                format!(
                    "TCA_SPIN_US={} is longer than TCA_TIMEOUT_MS={}: a wait would spin past its timeout; \
                     set TCA_SPIN_US at most {}",
                    s.as_micros(),
                    timeout.as_millis(),
                    timeout.as_micros()
                ),
            ));
        }
        Ok(Config { rank: rank as u16, size: size as u16, job, heap_bytes, timeout, spin })
    }

    /// Reads the configuration from the process environment.
    ///
    /// # Errors
    /// As [`Config::from_vars`].
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_vars(|k| std::env::var(k).ok())
    }

    /// The shared-memory name of `rank`'s segment in this job.
    pub fn segment_name(&self, rank: u16) -> String {
        format!("tca-{}-{}", self.job, rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let m: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_vars(|k| m.get(k).cloned())
    }

    #[test]
    fn tca_run_variables() {
        let c =
            cfg(&[("TCA_RANK", "2"), ("TCA_SIZE", "4"), ("TCA_JOB_ID", "j/1"), ("TCA_TIMEOUT_MS", "1500")]).unwrap();
        assert_eq!((c.rank, c.size, c.job.as_str()), (2, 4, "j_1"));
        assert_eq!(c.timeout, Duration::from_millis(1500));
        assert_eq!(c.segment_name(3), "tca-j_1-3");
    }

    #[test]
    fn mpi_launcher_variables() {
        let c =
            cfg(&[("OMPI_COMM_WORLD_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "2"), ("PMIX_NAMESPACE", "prterun-x-1@1")])
                .unwrap();
        assert_eq!((c.rank, c.size), (1, 2));
        assert_eq!(c.job, "pmix-prterun-x-1_1");
        let c = cfg(&[("PMI_RANK", "0"), ("PMI_SIZE", "3")]).unwrap();
        assert!(c.job.starts_with("ppid-"));
    }

    #[test]
    fn bad_environments() {
        assert_eq!(cfg(&[]).unwrap_err().error, TcaError::NotInitialized);
        let e = cfg(&[("TCA_RANK", "0"), ("TCA_SIZE", "17"), ("TCA_JOB_ID", "x")]);
        assert_eq!(e.unwrap_err().error, TcaError::TooManyNodes);
        let e = cfg(&[("TCA_RANK", "4"), ("TCA_SIZE", "4"), ("TCA_JOB_ID", "x")]);
        assert_eq!(e.unwrap_err().error, TcaError::InvalidNode);
        let e = cfg(&[("TCA_RANK", "a"), ("TCA_SIZE", "4")]);
        assert_eq!(e.unwrap_err().error, TcaError::NotInitialized);
        let e = cfg(&[("TCA_RANK", "0"), ("TCA_SIZE", "2")]);
        assert_eq!(e.unwrap_err().error, TcaError::NotInitialized);
    }

    #[test]
    fn a_spin_longer_than_the_timeout_is_rejected() {
        let job = [("TCA_RANK", "0"), ("TCA_SIZE", "2"), ("TCA_JOB_ID", "x")];
        let with = |extra: &[(&'static str, &'static str)]| cfg(&[&job[..], extra].concat());
        let e = with(&[("TCA_SPIN_US", "30000000"), ("TCA_TIMEOUT_MS", "300")]).unwrap_err();
        assert_eq!(e.error, TcaError::NotInitialized);
        assert!(e.detail.contains("TCA_SPIN_US=30000000") && e.detail.contains("TCA_TIMEOUT_MS=300"), "{e}");
        let c = with(&[("TCA_SPIN_US", "300000"), ("TCA_TIMEOUT_MS", "300")]).unwrap();
        assert_eq!(c.spin, Some(Duration::from_millis(300)));
        assert_eq!(with(&[]).unwrap().spin, None);
        // Against the default timeout (10 s).
        assert!(with(&[("TCA_SPIN_US", "10000001")]).is_err());
    }
}
