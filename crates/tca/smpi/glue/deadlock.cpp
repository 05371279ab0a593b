// Loaded with a program built by `tca cc`: when SimGrid finds that no actor can ever move again
// (a deadlock across MPI and TCA), say what every rank waits for in TCA terms after SimGrid's
// own listing of the actors, and end the run with a failure status (smpirun itself exits 0
// after a deadlock).
#include <simgrid/s4u/Engine.hpp>

#include <cstdio>
#include <cstdlib>

extern "C" void tca_smpi_report_deadlock(void);  // libtca (crates/tca/capi/src/smpi.rs)

namespace {
constexpr int deadlock_status = 3;

struct DeadlockHook {
    DeadlockHook()
    {
        simgrid::s4u::Engine::on_deadlock_cb([] {
            tca_smpi_report_deadlock();
            std::fflush(nullptr);
            std::_Exit(deadlock_status);
        });
    }
} hook;
}  // namespace
