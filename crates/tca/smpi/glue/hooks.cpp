// Loaded with a program built by `tca cc`, two hooks into SimGrid's engine:
// - when SimGrid finds that no actor can ever move again (a deadlock across MPI and TCA), say
//   what every rank waits for in TCA terms after SimGrid's own listing of the actors, and end
//   the run with a failure status (smpirun itself exits 0 after a deadlock);
// - when the simulation ends, write the TCA job's trace and statistics if its ranks did not
//   (a rank that returned from main without tcaFinalize).
#include <simgrid/s4u/Engine.hpp>

#include <cstdio>
#include <cstdlib>

// libtca (crates/tca/capi/src/smpi.rs)
extern "C" void tca_smpi_report_deadlock(void);
extern "C" void tca_smpi_simulation_end(void);

namespace {
constexpr int deadlock_status = 3;

struct Hooks {
    Hooks()
    {
        simgrid::s4u::Engine::on_deadlock_cb([] {
            tca_smpi_report_deadlock();
            std::fflush(nullptr);
            std::_Exit(deadlock_status);
        });
        simgrid::s4u::Engine::on_simulation_end_cb([] { tca_smpi_simulation_end(); });
    }
} hooks;
}  // namespace
