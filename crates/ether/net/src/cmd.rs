//! Running `ip` and `tc`: one call per configuration step, stdout returned, failures as one line.

use std::process::Command;

use crate::NetError;

/// Runs `program args...` and returns its stdout; a non-zero exit becomes [`NetError::Command`]
/// with the first line of stderr.
pub(crate) fn run(program: &str, args: &[&str]) -> Result<String, NetError> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|source| NetError::Spawn { program: program.to_string(), source })?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let first = stderr.lines().map(str::trim).find(|l| !l.is_empty());
    Err(NetError::Command {
        command: format!("{program} {}", args.join(" ")),
        stderr: first.map_or_else(|| format!("exit status {}", out.status), str::to_string),
    })
}

/// `ip args...`.
pub(crate) fn ip(args: &[&str]) -> Result<String, NetError> {
    run("ip", args)
}

/// `tc args...`.
pub(crate) fn tc(args: &[&str]) -> Result<String, NetError> {
    run("tc", args)
}
