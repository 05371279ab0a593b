// Loaded with a program built by `tca cc`, hooks into SimGrid's engine:
// - when SimGrid finds that no actor can ever move again (a deadlock across MPI and TCA), say
//   what every rank waits for in TCA terms after SimGrid's own listing of the actors, write
//   the TCA job's trace and statistics, and end the run with a failure status (smpirun itself
//   exits 0 after a deadlock);
// - when the simulation ends, write the TCA job's trace and statistics if its ranks did not
//   (a rank that returned from main without tcaFinalize), and if a rank called MPI_Abort, say
//   so and end with its error code (smpirun itself exits 0 then too);
// - a rank that calls exit with a status other than 0 after MPI_Finalize ends the run with that
//   status, as under mpirun, once the simulation ends or the others deadlock waiting for it;
// - a rank that ends (returns from main, or calls exit) without MPI_Finalize after MPI_Init
//   ends the run at once, as mpirun does, with its exit status or else 1: its peers may still
//   talk to it, and SMPI aborts on a message from an actor that is gone (smpirun alone only
//   says that the instance stalls);
// - when an actor ends, tell libtca, whose deadlock report then says that a rank which never
//   called tcaFinalize has returned from main;
// - a rank that SimGrid kills inside libtca (MPI_Abort kills every rank) returns through
//   libtca instead of unwinding through it, and libtca ends the rank at its C ABI's edge.
#include <simgrid/Exception.hpp>
#include <simgrid/engine.h>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <smpi/smpi.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

// libtca (crates/tca/capi/src/smpi.rs)
extern "C" void tca_smpi_report_deadlock(void);
extern "C" void tca_smpi_simulation_end(void);
extern "C" void tca_smpi_actor_ended(long pid);

namespace {
constexpr int deadlock_status = 3;

// A rank's request to end the run: its rank, code and time.
struct Ending {
  bool called = false;
  int rank = 0;
  int code = 0;
  double at = 0;
};
// The first MPI_Abort of the run, and the first exit with a status other than 0.
Ending first_abort, first_failure;

// The MPI rank of each actor that initialised MPI (an exit after MPI_Finalize has no rank).
std::map<long, int> rank_of_actor;
// The actors that called MPI_Finalize.
std::set<long> finalized_actors;

// The rank of actor `pid` if it initialised MPI, never finalized it, and no MPI_Abort is
// ending the run; -1 otherwise.
int unfinalized_rank(long pid)
{
  auto rank = rank_of_actor.find(pid);
  if (rank == rank_of_actor.end() || finalized_actors.count(pid) != 0 || first_abort.called)
    return -1;
  return rank->second;
}

// Ends the run now for a rank that leaves without MPI_Finalize: says so, writes the TCA job's
// trace and statistics, and exits with the rank's status (its low 8 bits), or 1 for 0.
[[noreturn]] void end_for_unfinalized(int rank, int status)
{
  double at = simgrid_get_clock() * 1e6;
  if ((status & 0xff) != 0)
    std::fprintf(stderr, "tca: rank %d exited with status %d at %.3f us without MPI_Finalize\n", rank,
                 status & 0xff, at);
  else
    std::fprintf(stderr, "tca: rank %d ended without MPI_Finalize at %.3f us (as under mpirun, the run fails)\n",
                 rank, at);
  tca_smpi_simulation_end();
  std::fflush(nullptr);
  std::_Exit((status & 0xff) != 0 ? status & 0xff : 1);
}

void note_rank()
{
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  rank_of_actor[simgrid::s4u::this_actor::get_pid()] = rank;
}

// Says which rank exited with which status and ends the run with it, if one did. As a shell
// sees exit(status): its low 8 bits.
void end_with_a_failed_rank()
{
  if (!first_failure.called)
    return;
  std::fprintf(stderr, "tca: rank %d exited with status %d at %.3f us\n", first_failure.rank,
               first_failure.code & 0xff, first_failure.at * 1e6);
  std::fflush(nullptr);
  std::_Exit(first_failure.code & 0xff);
}

struct Hooks {
  Hooks()
  {
    simgrid::s4u::Engine::on_deadlock_cb([] {
      tca_smpi_report_deadlock();
      tca_smpi_simulation_end();
      end_with_a_failed_rank();
      std::fflush(nullptr);
      std::_Exit(deadlock_status);
    });
    simgrid::s4u::Actor::on_termination_cb([](const simgrid::s4u::Actor& actor) {
      tca_smpi_actor_ended(static_cast<long>(actor.get_pid()));
      int rank = unfinalized_rank(static_cast<long>(actor.get_pid()));
      if (rank >= 0)
        end_for_unfinalized(rank, 0);
    });
    simgrid::s4u::Engine::on_simulation_end_cb([] {
      tca_smpi_simulation_end();
      if (first_abort.called) {
        std::fprintf(stderr, "tca: rank %d called MPI_Abort with error code %d at %.3f us\n", first_abort.rank,
                     first_abort.code, first_abort.at * 1e6);
        std::fflush(nullptr);
        // As mpirun: the error code is the exit status (an abort with 0, or a code no status
        // can hold, is a failure all the same).
        std::_Exit(first_abort.code > 0 && first_abort.code < 256 ? first_abort.code : 1);
      }
      end_with_a_failed_rank();
    });
  }
} hooks;
}  // namespace

// MPI_Abort of a program built by `tca cc`, in front of SMPI's (libtcasmpi comes before
// libsimgrid in the program's libraries; MPI's profiling interface): noted, every other actor
// killed, then PMPI_Abort. SMPI 3.32's own kill misses ranks waiting in MPI once the program
// has made a communicator (MPI_Comm_dup, MPI_Comm_split), which then looked like a deadlock.
extern "C" int MPI_Abort(MPI_Comm comm, int code)
{
  int initialized = 0;
  PMPI_Initialized(&initialized);
  if (!initialized) {
    // SMPI's would only warn and return; an abort ends the run.
    std::fprintf(stderr, "tca: MPI_Abort with error code %d before MPI_Init\n", code);
    std::fflush(nullptr);
    std::_Exit(code > 0 && code < 256 ? code : 1);
  }
  if (!first_abort.called) {
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    first_abort = {true, rank, code, simgrid_get_clock()};
  }
  simgrid::s4u::Actor::kill_all();
  return PMPI_Abort(comm, code);
}

// exit of a program built by `tca cc` (SMPI's smpi_helpers.h turns exit into smpi_exit), in
// front of SMPI's: without MPI_Finalize the run ends now; after it, a status other than 0 is
// noted, then SMPI ends the rank.
extern "C" [[noreturn]] void smpi_exit(int status)
{
  long pid = simgrid::s4u::this_actor::get_pid();
  int unfinalized = unfinalized_rank(pid);
  if (unfinalized >= 0)
    end_for_unfinalized(unfinalized, status);
  auto rank = rank_of_actor.find(pid);
  if ((status & 0xff) != 0 && rank != rank_of_actor.end() && !first_failure.called)
    first_failure = {true, rank->second, status, simgrid_get_clock()};
  static auto* const smpis = reinterpret_cast<void (*)(int)>(dlsym(RTLD_NEXT, "smpi_exit"));
  if (smpis != nullptr)
    smpis(status);
  std::_Exit(status);  // not reached: SMPI's ends the rank
}

// MPI_Finalize, in front of SMPI's: noted, so that a rank that ends without it is seen.
extern "C" int MPI_Finalize(void)
{
  finalized_actors.insert(simgrid::s4u::this_actor::get_pid());
  return PMPI_Finalize();
}

// MPI_Init and MPI_Init_thread, in front of SMPI's: the actor's rank is noted for smpi_exit.
extern "C" int MPI_Init(int* argc, char*** argv)
{
  int e = PMPI_Init(argc, argv);
  if (e == MPI_SUCCESS)
    note_rank();
  return e;
}

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided)
{
  int e = PMPI_Init_thread(argc, argv, required, provided);
  if (e == MPI_SUCCESS)
    note_rank();
  return e;
}

// Runs call(arg), the SimGrid calls a rank makes inside libtca (crates/tca/smpi/src/job.rs):
// 0, or 1 when SimGrid killed the rank meanwhile. SimGrid throws the kill as a C++ exception at
// any call that yields to it (a semaphore's acquire or release, an actor's creation), and
// libtca's Rust frames cannot pass it (its C ABI catches panics); libtca returns through them
// instead and calls tca_smpi_end_killed_rank at the edge of its C ABI, which throws it again.
extern "C" int tca_smpi_killable(void (*call)(void*), void* arg)
{
  try {
    call(arg);
    return 0;
  } catch (const simgrid::ForcefulKillException&) {
    return 1;
  }
}

extern "C" void tca_smpi_end_killed_rank(void)
{
  simgrid::ForcefulKillException::do_throw();
}
