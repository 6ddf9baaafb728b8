//! Process signals: the first Ctrl-C / SIGTERM asks for a graceful stop, a second one exits.

/// Resolves on the first Ctrl-C or SIGTERM; a second signal afterwards exits the process at once
/// (status 130), as controller-runtime's signal handler does. Pass it to [`super::Manager::run`].
pub async fn shutdown_signal() {
    wait_for_signal().await;
    tracing::info!("shutdown signal received; stopping gracefully (send it again to exit now)");
    tokio::spawn(async {
        wait_for_signal().await;
        tracing::warn!("second shutdown signal: exiting immediately");
        std::process::exit(130);
    });
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops the manager");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
