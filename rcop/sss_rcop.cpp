// The RCOP pass of `sss cc`: after every store that may reach the SSS
// DSM heap, a note of the bytes written, so that an unmodified program
// runs on the heap in note mode (no write-protect faults).
//
// Instrumented: stores (scalar, vector, atomic, volatile), atomic
// read-modify-writes and compare-exchanges, and the destinations of
// memset/memcpy/memmove. Left alone: stores whose underlying object is
// a stack slot or a global variable (never in the heap). Each other
// store gets an inline test against the heap range the runtime
// publishes (sss_rcop_lo, sss_rcop_span; span 0 in trap mode or
// before a heap exists) and, inside it, a call sss_rcop_note(addr,
// len). At O1 and above this runs before the loop vectorizer (dead
// stores are gone by then, loops still simple); at O0, last.
//
// SSS_RCOP_OPT selects the optimizations (and, with `udsm`, UDSM mode:
// see planUdsm()): `no` (the seeds' NO row: one
// note per dynamic store, each sent alone), `mb` (their MB row: the same
// notes, combined by the heap), `ia` (coalescing, each note sent alone),
// `mb,ia` (the default), `bo` (back-off), `all`, or a comma-separated
// list. Under `ia` a store's
// bytes over whole loops become one range note at the exit of the
// widest loop where they are exactly one range (see plan()); a store
// covered by another's range needs none; cursor loops are noted by
// bucket (see Cursor); a store of whole words in a loop that is not one
// range but whose bytes a loop nest bounds, and a cursor loop with a
// trip count, are diffed ranges: one call before the nest has the heap
// twin the range and send what changed at the release, the store's own
// note running only if the heap refused (see diffing(), boundNest());
// the other stores of one base between two barriers are noted once per
// run of bytes (see join()). Under `bo`
// loops that note tick a counter and call sss_rcop_backoff now and then
// (see backoffChecks()). First in the pipeline, SSS_PROTOCOL
// annotations select the protocol of a G_MALLOC (RcopProtocols).

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/PostOrderIterator.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/MemoryBuiltins.h"
#include "llvm/Analysis/PostDominators.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include <cstdlib>
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/LoopSimplify.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

using namespace llvm;

// SSS_RCOP_STATS=1 prints what was instrumented (clang reads -mllvm
// options before it loads a pass plugin, so settings come from the
// environment, which `sss cc` sets).
static bool stats() {
  const char *S = getenv("SSS_RCOP_STATS");
  return S && *S && *S != '0';
}

// SSS_RCOP_STATS=2 also says, per store, why coalescing stopped where
// it did.
static bool explain() {
  const char *S = getenv("SSS_RCOP_STATS");
  return S && *S == '2';
}

namespace {

// True when no store through P can reach the heap: its underlying
// object is a stack slot, a global variable, or a block from the C
// library's or C++'s allocator (a declaration clang gives an allocation
// family: `malloc`, `calloc`, `realloc`, `operator new`, ...; not under
// `-fno-builtin`), which is the process's own memory, never the DSM
// heap (G_MALLOC's `sss_pm_malloc` has no family).
bool isPrivate(const Value *P) {
  const Value *U = getUnderlyingObject(P, 0);
  if (isa<AllocaInst>(U) || isa<GlobalVariable>(U))
    return true;
  if (auto *CB = dyn_cast<CallBase>(U))
    if (const Function *F = CB->getCalledFunction())
      return F->isDeclaration() && F->hasFnAttribute("alloc-family");
  return false;
}

struct Point {
  Instruction *I;
  Value *Ptr;
  Value *Len; // i64
};

// SSS_RCOP_OPT, as `sss cc` checked it: `no`, `mb`, `ia`, `bo`, `all`
// or a comma-separated list of them.
bool option(const char *Name) {
  const char *S = getenv("SSS_RCOP_OPT");
  StringRef Opt = S && *S ? S : "mb,ia";
  SmallVector<StringRef, 4> Parts;
  Opt.split(Parts, ',');
  for (StringRef P : Parts)
    if (P == Name || (P == "all" && StringRef(Name) != "no" && StringRef(Name) != "udsm"))
      return true;
  return false;
}

// Coalescing and redundant-write elimination: `ia`, or no row named
// (`bo` alone keeps the default `mb,ia`).
bool coalescing() { return option("ia") || (!option("no") && !option("mb")); }

// Combining (the seeds' MB): done by the heap, which merges a release's
// notes and packs those for one home into as few packets as they fill.
// Without it (`no`, `ia`: the seeds' NO and IA rows) a constructor tells
// the heap to send every note as a packet of its own.
bool combining() { return option("mb") || (!option("no") && !option("ia")); }

// Back-off checks at the latches of loops that note (`bo`).
bool backingOff() { return option("bo"); }

// Diffed ranges (part of coalescing): stores bounded over a loop nest but
// not one range, and cursor loops with a trip count, are covered by one
// call before the loop that has the heap diff the range at the release
// (sss_rcop_twin_range, sss_rcop_cursor_twin). SSS_RCOP_DIFF=0 turns
// them off (to measure what they change).
bool diffing() {
  const char *S = getenv("SSS_RCOP_DIFF");
  return coalescing() && !(S && *S == '0');
}

// Whether a store of Len bytes with alignment A writes whole aligned
// 8-byte words. A diff sends runs of changed words trimmed at both ends
// to the bytes that changed, so the bytes inside a run are sent whole:
// right when the task wrote every byte of those words, wrong when
// another task wrote other bytes of one of them in the same interval
// (bytes of a char array dealt round-robin to the tasks). Only stores of
// whole words are diffed; the others keep their exact notes.
bool wholeWords(uint64_t Len, Align A) { return Len > 0 && Len % 8 == 0 && A.value() >= 8; }

// UDSM (`sss cc --udsm` adds `udsm` to SSS_RCOP_OPT): loads and stores
// that may reach the heap first make their page present (see
// planUdsm()).
bool udsm() { return option("udsm"); }

// A range note planned at the exit of a loop: start address and length
// in bytes, as SCEVs valid there. A loop whose trip count is unknown
// (its bound reloaded on every iteration) has no Len: its range ends
// Tail bytes after Last, the store's address in the last iteration.
struct Range {
  Loop *L;
  const SCEV *Start;
  const SCEV *Len;
  Value *Last = nullptr;
  int64_t Tail = 0;
};

// The bytes a store writes in one iteration of loop L: elements of Len
// bytes from Start, GapStride apart, GapTrips of them (no gap: one
// element).
struct Level {
  Loop *L;
  const SCEV *Start, *Len, *GapStride, *GapTrips;
  bool operator==(const Level &O) const {
    return L == O.L && Start == O.Start && Len == O.Len && GapStride == O.GapStride &&
           GapTrips == O.GapTrips;
  }
};

// Whether L runs every iteration to its latch and leaves through a
// dedicated exit: only the latch leaves, and only it reaches the exit.
bool counted(Loop *L) {
  BasicBlock *Latch = L->getLoopLatch();
  if (!Latch || L->getExitingBlock() != Latch || !L->getLoopPreheader())
    return false;
  // The note goes at the top of the exit, which only the latch reaches
  // (loop-simplify form: dedicated exits).
  return L->getUniqueExitBlock() && L->getUniqueExitBlock()->getSinglePredecessor();
}

// Whether L is counted() with a computable trip count; the count.
const SCEV *wholeIterations(Loop *L, ScalarEvolution &SE) {
  if (!counted(L))
    return nullptr;
  const SCEV *BTC = SE.getBackedgeTakenCount(L);
  if (isa<SCEVCouldNotCompute>(BTC))
    return nullptr;
  return SE.getAddExpr(SE.getTruncateOrZeroExtend(BTC, SE.getEffectiveSCEVType(BTC->getType())),
                       SE.getOne(BTC->getType()));
}

// Whether I is a call that may synchronize: one that may write memory
// and is not known `nosync` (an UNLOCK, a BARRIER, anything opaque).
bool maySync(const Instruction &I) {
  auto *CB = dyn_cast<CallBase>(&I);
  if (!CB || isa<DbgInfoIntrinsic>(CB))
    return false;
  if (auto *II = dyn_cast<IntrinsicInst>(CB)) {
    // Memory intrinsics are stores (noted by themselves); the rest
    // that touch memory are treated as calls.
    if (isa<MemIntrinsic>(II) || II->isAssumeLikeIntrinsic() || II->isLifetimeStartOrEnd() ||
        !II->mayHaveSideEffects())
      return false;
  }
  return !CB->onlyReadsMemory() && !CB->hasFnAttr(Attribute::NoSync);
}

// Whether no call in L can synchronize: a note placed at L's exit must
// not slip past a release inside the loop (an UNLOCK, a BARRIER), or the
// bytes written before it would miss that release.
bool syncFree(Loop *L) {
  for (BasicBlock *BB : L->blocks())
    for (Instruction &I : *BB)
      if (maySync(I))
        return false;
  return true;
}

// Whether a note must not move from before I to after it: I may
// synchronize (a call as above, an atomic or a fence: ordered accesses
// the program may build its own synchronization on), or may not hand
// control to the next instruction (a call that may not return or may
// unwind: the note would be skipped).
bool barrier(const Instruction &I) {
  if (isa<DbgInfoIntrinsic>(I))
    return false;
  return maySync(I) || I.isAtomic() || isa<FenceInst>(I) ||
         !isGuaranteedToTransferExecutionToSuccessor(&I);
}

// Whether A and B are the same value (SCEVs are uniqued; the predicate
// catches forms ScalarEvolution does not fold to one).
bool same(ScalarEvolution &SE, const SCEV *A, const SCEV *B) {
  if (A->getType() != B->getType()) {
    Type *T = SE.getWiderType(A->getType(), B->getType());
    A = SE.getNoopOrSignExtend(A, T);
    B = SE.getNoopOrSignExtend(B, T);
  }
  return A == B || SE.getMinusSCEV(A, B)->isZero() ||
         SE.isKnownPredicate(ICmpInst::ICMP_EQ, A, B);
}

// The widest range a store of Size bytes at Start (in block BB) writes
// over whole loops, or none when it cannot be coalesced. Walking
// outwards, each loop either advances the store by what it wrote so far
// (the bytes are consecutive: the range grows by the trip count), leaves
// it where it is (the same bytes again: noted once, the seeds'
// redundant-write elimination), or, once, strides over a gap that an
// enclosing loop fills (a column walked row by row, then column by
// column: the whole block). A range is only kept where it is dense.
//
// Trace receives what the store writes per iteration of each loop it
// walked, innermost first: the last entry is where it stopped.
//
// Ptr is the store's address and Lo the offset of Start from it: an
// innermost loop that writes consecutive bytes but whose trip count
// ScalarEvolution cannot compute is noted from Start to the end of the
// last iteration's store.
std::optional<Range> plan(const SCEV *Start, uint64_t Size, Value *Ptr, int64_t Lo,
                          BasicBlock *BB, LoopInfo &LI, ScalarEvolution &SE, DominatorTree &DT,
                          std::vector<Level> &Trace) {
  Loop *L = LI.getLoopFor(BB);
  if (!L)
    return std::nullopt;
  Type *I64 = Type::getInt64Ty(BB->getContext());
  const SCEV *Len = SE.getConstant(I64, Size);
  // A pending strided dimension: elements of Len bytes, GapStride apart,
  // GapTrips of them.
  const SCEV *GapStride = nullptr, *GapTrips = nullptr;
  BasicBlock *Runs = BB; // a block that runs once per iteration of L
  std::optional<Range> Best;
  const char *Why = "outermost loop";
  unsigned Depth = 0;
  auto Stop = [&](const char *W) { Why = W; };
  for (; L; L = L->getParentLoop(), Depth++) {
    Trace.push_back({L, Start, Len, GapStride, GapTrips});
    if (!L->getLoopLatch() || !DT.dominates(Runs, L->getLoopLatch())) {
      Stop("not run on every iteration");
      break;
    }
    if (!syncFree(L)) {
      Stop("a call that may synchronize");
      break;
    }
    const SCEV *Trips = wholeIterations(L, SE);
    if (!Trips && Depth == 0 && !GapStride && counted(L)) {
      // The exit follows the latch only, and the store runs on every
      // iteration: at the exit it has run at least once, and its last
      // address is the end of what the loop wrote.
      auto *AR = dyn_cast<SCEVAddRecExpr>(Start);
      auto *Step = AR && AR->getLoop() == L && AR->isAffine()
                       ? dyn_cast<SCEVConstant>(AR->getStepRecurrence(SE))
                       : nullptr;
      if (Step && Step->getAPInt().getSExtValue() == (int64_t)Size &&
          SE.isLoopInvariant(AR->getStart(), L)) {
        Best = Range{L, AR->getStart(), nullptr, Ptr, Lo + (int64_t)Size};
        Stop("trip count unknown: noted to the last iteration's store");
        Depth++;
        break;
      }
    }
    if (!Trips) {
      Stop(!L->getLoopPreheader()                        ? "no preheader"
           : L->getExitingBlock() != L->getLoopLatch() ? "leaves other than through its latch"
           : !L->getUniqueExitBlock() ||
                   !L->getUniqueExitBlock()->getSinglePredecessor()
               ? "no exit of its own"
                                                          : "no trip count");
      break;
    }
    const SCEV *T64 = SE.getTruncateOrZeroExtend(Trips, I64);
    auto *AR = dyn_cast<SCEVAddRecExpr>(Start);
    if (AR && AR->getLoop() == L && AR->isAffine()) {
      const SCEV *Step = SE.getTruncateOrSignExtend(AR->getStepRecurrence(SE), I64);
      Start = AR->getStart();
      if (GapStride) {
        // The gap's elements, advanced one by one, fill it exactly.
        if (!same(SE, Step, Len) || !same(SE, GapStride, SE.getMulExpr(Len, T64))) {
          Stop("gap not filled");
          break;
        }
        Len = SE.getMulExpr(GapStride, GapTrips);
        GapStride = GapTrips = nullptr;
      } else if (same(SE, Step, Len)) {
        Len = SE.getMulExpr(Len, T64);
      } else if (!isa<SCEVConstant>(Step) ||
                 cast<SCEVConstant>(Step)->getAPInt().getSExtValue() > 0) {
        // Filled only if an enclosing loop steps by Len and the gap is
        // Len times its trip count (checked there), so positive.
        GapStride = Step;
        GapTrips = T64;
      } else {
        Stop("step neither consecutive nor a gap");
        break;
      }
    } else if (!SE.isLoopInvariant(Start, L)) {
      Stop("address not affine in the loop");
      break;
    }
    if (!SE.isLoopInvariant(Start, L) || !SE.isLoopInvariant(Len, L) ||
        (GapStride &&
         (!SE.isLoopInvariant(GapStride, L) || !SE.isLoopInvariant(GapTrips, L)))) {
      Stop("range varies in the loop");
      break;
    }
    if (!GapStride)
      Best = Range{L, Start, Len};
    Runs = L->getHeader();
  }
  if (explain()) {
    errs() << "sss-rcop: " << BB->getParent()->getName() << ": store at " << *Start
           << " len " << *Len << ": " << Depth << " loop(s), stopped: " << Why
           << (Best ? "" : " (not coalesced)") << "\n";
  }
  return Best;
}

bool match1(Value *V) {
  auto *C = dyn_cast<ConstantInt>(V);
  return C && C->isOne();
}

// Whether V is Ld or a load of the same slot in its block (reloaded
// after the store through the cursor, which the compiler could not
// tell apart from the slot).
bool sameSlot(Value *V, LoadInst *Ld) {
  auto *L2 = dyn_cast<LoadInst>(V);
  return L2 && L2->getParent() == Ld->getParent() &&
         L2->getPointerOperand() == Ld->getPointerOperand() && L2->getType() == Ld->getType() &&
         !L2->isVolatile() && !L2->isAtomic();
}

// A cursor store, `Dst[P[d]++] = v` (radix sort's permutation): the
// bytes written through slot d are Dst[P0[d] .. P[d]) where P0 is P at
// loop entry, whatever order the slots come in. Such a loop gets a copy
// of P[0 .. N) at entry and, at exit, one note per bucket that moved
// (and for the slots of P that changed); N is the bound of d's mask or
// remainder.
struct Cursor {
  Loop *L;
  StoreInst *S;   // the store through the cursor
  StoreInst *Inc; // P[d] = c + 1
  Value *P;       // the cursor array
  Value *Dst;     // the array written through it
  Value *D;       // the slot index
  uint64_t Width; // bytes of a cursor (4 or 8)
  uint64_t Elem;  // bytes of an element of Dst
};

// V as a value available before L: V itself when loop-invariant, else
// rebuilt there from loads of globals the loop reloads (the compiler
// could not tell them apart from the loop's stores) and arithmetic on
// them. Null when V depends on the iteration.
Value *hoist(Value *V, Loop *L, IRBuilder<> &B, unsigned Depth = 0) {
  if (L->isLoopInvariant(V))
    return V;
  if (Depth > 4)
    return nullptr;
  if (auto *Ld = dyn_cast<LoadInst>(V))
    if (isa<GlobalVariable>(Ld->getPointerOperand()) && !Ld->isVolatile() && !Ld->isAtomic())
      return B.CreateLoad(Ld->getType(), Ld->getPointerOperand());
  if (auto *BO = dyn_cast<BinaryOperator>(V)) {
    Value *X = hoist(BO->getOperand(0), L, B, Depth + 1);
    Value *Y = X ? hoist(BO->getOperand(1), L, B, Depth + 1) : nullptr;
    return Y ? B.CreateBinOp(BO->getOpcode(), X, Y) : nullptr;
  }
  if (auto *C = dyn_cast<CastInst>(V))
    if (Value *X = hoist(C->getOperand(0), L, B, Depth + 1))
      return B.CreateCast(C->getOpcode(), X, C->getType());
  return nullptr;
}

// An inclusive upper bound of the unsigned value of V, built from
// values defined outside L: a mask (`x & m`), a remainder (`x % m`), a
// shift of either, or V itself when it is loop-invariant. Null when V
// has none of these forms. Instructions go before At.
Value *bound(Value *V, Loop *L, IRBuilder<> &B, unsigned Depth = 0) {
  Type *I64 = B.getInt64Ty();
  if (Depth > 6 || !V->getType()->isIntegerTy())
    return nullptr;
  if (L->isLoopInvariant(V))
    return B.CreateZExtOrTrunc(V, I64);
  if (auto *C = dyn_cast<CastInst>(V))
    if (isa<ZExtInst>(C) || isa<SExtInst>(C) || isa<TruncInst>(C)) {
      Value *U = bound(C->getOperand(0), L, B, Depth + 1);
      // A truncation bounds by the narrower type too; an extension
      // keeps a bound that came from a non-negative mask.
      return U ? B.CreateZExtOrTrunc(U, I64) : nullptr;
    }
  auto *BO = dyn_cast<BinaryOperator>(V);
  if (!BO)
    return nullptr;
  Value *X = BO->getOperand(0), *Y = BO->getOperand(1);
  switch (BO->getOpcode()) {
  case Instruction::And:
    if (Value *H = hoist(Y, L, B))
      return B.CreateZExtOrTrunc(H, I64);
    if (Value *H = hoist(X, L, B))
      return B.CreateZExtOrTrunc(H, I64);
    return nullptr;
  case Instruction::URem:
    if (Value *H = hoist(Y, L, B))
      return B.CreateSub(B.CreateZExtOrTrunc(H, I64), B.getInt64(1));
    return nullptr;
  case Instruction::LShr:
  case Instruction::AShr:
    if (Value *H = hoist(Y, L, B)) {
      Value *U = bound(X, L, B, Depth + 1);
      return U ? B.CreateLShr(U, B.CreateZExtOrTrunc(H, I64)) : nullptr;
    }
    return nullptr;
  default:
    return nullptr;
  }
}

// Whether S is a cursor store in a loop that does nothing else to
// memory the analysis cannot see through: only S, the increment, and
// stores to stack slots; no calls that may write.
std::optional<Cursor> cursor(StoreInst *S, LoopInfo &LI, const DataLayout &DL) {
  Loop *L = LI.getLoopFor(S->getParent());
  if (!L)
    return std::nullopt;
  if (!L->getLoopPreheader() || !L->getUniqueExitBlock() || !L->hasDedicatedExits() ||
      S->isVolatile() || S->isAtomic())
    return std::nullopt;
  auto *G = dyn_cast<GetElementPtrInst>(S->getPointerOperand());
  if (!G || G->getNumIndices() != 1 || !L->isLoopInvariant(G->getPointerOperand()))
    return std::nullopt;
  uint64_t Elem = DL.getTypeAllocSize(G->getSourceElementType());
  if (Elem == 0 || Elem != DL.getTypeStoreSize(S->getValueOperand()->getType()))
    return std::nullopt;
  Value *Idx = G->getOperand(1);
  if (isa<SExtInst>(Idx) || isa<ZExtInst>(Idx))
    Idx = cast<CastInst>(Idx)->getOperand(0);
  auto *Ld = dyn_cast<LoadInst>(Idx);
  if (!Ld || Ld->getParent() != S->getParent() || Ld->isVolatile() || Ld->isAtomic() ||
      !Ld->getType()->isIntegerTy() || Ld->getType()->getIntegerBitWidth() < 32)
    return std::nullopt;
  Value *PP = Ld->getPointerOperand();
  auto *PG = dyn_cast<GetElementPtrInst>(PP);
  if (!PG || PG->getNumIndices() != 1 || PG->getSourceElementType() != Ld->getType() ||
      !L->isLoopInvariant(PG->getPointerOperand()))
    return std::nullopt;
  // The increment: c + 1 stored back to the same slot, in the same block.
  StoreInst *Inc = nullptr;
  for (Instruction &I : *S->getParent())
    if (auto *St = dyn_cast<StoreInst>(&I))
      if (St != S && St->getPointerOperand() == PP)
        if (auto *Add = dyn_cast<BinaryOperator>(St->getValueOperand()))
          if (Add->getOpcode() == Instruction::Add &&
              ((sameSlot(Add->getOperand(0), Ld) && match1(Add->getOperand(1))) ||
               (sameSlot(Add->getOperand(1), Ld) && match1(Add->getOperand(0)))))
            Inc = St;
  if (!Inc || Inc->isVolatile() || Inc->isAtomic())
    return std::nullopt;
  for (BasicBlock *BB : L->blocks())
    for (Instruction &I : *BB) {
      if (auto *St = dyn_cast<StoreInst>(&I)) {
        if (St != S && St != Inc && !isa<AllocaInst>(getUnderlyingObject(St->getPointerOperand())))
          return std::nullopt;
      } else if (auto *CB = dyn_cast<CallBase>(&I)) {
        if (CB->mayWriteToMemory() && !isa<DbgInfoIntrinsic>(CB) &&
            !(isa<IntrinsicInst>(CB) && (cast<IntrinsicInst>(CB)->isAssumeLikeIntrinsic() ||
                                         cast<IntrinsicInst>(CB)->isLifetimeStartOrEnd())))
          return std::nullopt;
      } else if (I.mayWriteToMemory()) {
        return std::nullopt; // atomics, fences
      }
    }
  return Cursor{L, S, Inc, PG->getPointerOperand(), G->getPointerOperand(), PG->getOperand(1),
                DL.getTypeStoreSize(Ld->getType()), Elem};
}

// Counts for SSS_RCOP_STATS, over every function of the module.
struct Counts {
  unsigned Each = 0, Skipped = 0, Coalesced = 0, RangeNotes = 0, Covered = 0, Cursors = 0,
           CursorTwins = 0, Diffed = 0, DiffedRanges = 0,
           Joined = 0, JoinedNotes = 0, Checks = 0, Present = 0, PresentHoisted = 0,
           PresentRanges = 0;
};
Counts Total;

// The block that runs next after B on every path from it, with nothing
// on the way that may synchronize or leave: B's immediate
// post-dominator C, when B dominates C (B's addresses are available
// there), both lie in the same iteration of the same innermost loop (C
// is not its header), and every block between them stays in that loop,
// returns nowhere, holds no barrier() and takes part in no cycle. A
// note delayed from B to C then runs exactly when B's stores ran, with
// no synchronization in between. Null otherwise.
BasicBlock *follower(BasicBlock *B, DominatorTree &DT, PostDominatorTree &PDT, LoopInfo &LI) {
  DomTreeNode *N = PDT.getNode(B);
  if (!N || !N->getIDom())
    return nullptr;
  BasicBlock *C = N->getIDom()->getBlock();
  if (!C || C == B || !DT.dominates(B, C))
    return nullptr;
  Loop *L = LI.getLoopFor(B);
  if (LI.getLoopFor(C) != L || (L && C == L->getHeader()))
    return nullptr;
  auto Plain = [](BasicBlock *X) {
    return isa<BranchInst>(X->getTerminator()) || isa<SwitchInst>(X->getTerminator());
  };
  if (!Plain(B))
    return nullptr;
  // Depth first over the blocks between B and C.
  DenseMap<BasicBlock *, bool> Done; // false while on the stack
  SmallVector<std::pair<BasicBlock *, unsigned>, 16> Stack;
  auto Enter = [&](BasicBlock *X) {
    if (X == C)
      return true;
    auto It = Done.find(X);
    if (It != Done.end())
      return It->second; // on the stack: a cycle
    if (X == B || Done.size() > 64 || LI.getLoopFor(X) != L || (L && X == L->getHeader()) ||
        !Plain(X))
      return false;
    for (Instruction &I : *X)
      if (barrier(I))
        return false;
    Done[X] = false;
    Stack.push_back({X, 0});
    return true;
  };
  for (BasicBlock *S : successors(B)) {
    if (!Enter(S))
      return nullptr;
    while (!Stack.empty()) {
      BasicBlock *X = Stack.back().first;
      unsigned Next = Stack.back().second++;
      if (Next < X->getTerminator()->getNumSuccessors()) {
        if (!Enter(X->getTerminator()->getSuccessor(Next)))
          return nullptr;
      } else {
        Done[X] = true;
        Stack.pop_back();
      }
    }
  }
  return C;
}

// A note for straight-line stores: Len bytes from Ptr, after At.
struct Joint {
  Instruction *At;
  Value *Ptr;
  uint64_t Len;
};

// Redundant-write elimination outside loops (the seeds': a location
// written several times between two synchronizations is noted once).
// The function is cut into chains of blocks that run one after the
// other (follower()), and each chain into segments at every barrier();
// within a segment, stores and memory intrinsics of constant length at
// constant distances from each other (ScalarEvolution: the same base,
// so two pointers that may alias but are not provably at a constant
// distance stay apart, and a pointer reloaded between stores is a new
// base) are noted as one range per run of overlapping or adjacent
// bytes, after the run's last store: every byte written, none that was
// not, and no barrier between any of the stores and the note. Returns
// the points still noted one by one; the joint notes go to Out.
constexpr size_t Window = 64;
std::vector<Point> join(Function &F, std::vector<Point> &Points, LoopInfo &LI,
                        ScalarEvolution &SE, DominatorTree &DT, PostDominatorTree &PDT,
                        std::vector<Joint> &Out) {
  DenseMap<Instruction *, size_t> Member;
  for (size_t i = 0; i < Points.size(); i++) {
    Instruction *I = Points[i].I;
    auto *Len = dyn_cast<ConstantInt>(Points[i].Len);
    bool Simple = isa<StoreInst>(I) ? cast<StoreInst>(I)->isSimple()
                  : isa<MemIntrinsic>(I) ? !cast<MemIntrinsic>(I)->isVolatile()
                                          : false;
    if (Simple && Len && !Len->isZero() && Len->getValue().getActiveBits() < 40)
      Member[I] = i;
  }
  std::vector<bool> Joined(Points.size(), false);
  // The stores of one segment, in program order.
  auto Group = [&](std::vector<size_t> &Seg) {
    std::vector<bool> Taken(Seg.size(), false);
    for (size_t i = 0; i < Seg.size(); i++) {
      if (Taken[i])
        continue;
      Value *P0 = Points[Seg[i]].Ptr;
      const SCEV *Base = SE.getSCEV(P0);
      std::vector<std::pair<int64_t, size_t>> Ms{{0, i}}; // offset, position
      // Partners are looked for among the next Window stores only: a
      // long segment of stores at unknown distances would otherwise cost
      // a ScalarEvolution subtraction per pair.
      for (size_t j = i + 1; j < Seg.size() && j <= i + Window; j++) {
        Value *Pj = Points[Seg[j]].Ptr;
        if (Taken[j] || Pj->getType() != P0->getType())
          continue;
        if (auto *D = dyn_cast<SCEVConstant>(SE.getMinusSCEV(SE.getSCEV(Pj), Base))) {
          Ms.push_back({D->getAPInt().getSExtValue(), j});
          Taken[j] = true;
        }
      }
      std::sort(Ms.begin(), Ms.end());
      auto Size = [&](size_t Pos) {
        return (int64_t)cast<ConstantInt>(Points[Seg[Pos]].Len)->getZExtValue();
      };
      for (size_t a = 0; a < Ms.size();) {
        int64_t End = Ms[a].first + Size(Ms[a].second);
        size_t Last = Ms[a].second, b = a + 1;
        for (; b < Ms.size() && Ms[b].first <= End; b++) {
          End = std::max(End, Ms[b].first + Size(Ms[b].second));
          Last = std::max(Last, Ms[b].second);
        }
        if (b - a > 1) {
          // The run starts at its first member's address.
          Out.push_back({Points[Seg[Last]].I, Points[Seg[Ms[a].second]].Ptr,
                         (uint64_t)(End - Ms[a].first)});
          for (size_t k = a; k < b; k++)
            Joined[Seg[Ms[k].second]] = true;
          Total.Joined += b - a;
          Total.JoinedNotes++;
        }
        a = b;
      }
    }
    Seg.clear();
  };
  SmallPtrSet<BasicBlock *, 32> Chained;
  ReversePostOrderTraversal<Function *> RPOT(&F);
  for (BasicBlock *B : RPOT) {
    if (!Chained.insert(B).second)
      continue;
    std::vector<BasicBlock *> Chain{B};
    while (BasicBlock *C = follower(Chain.back(), DT, PDT, LI)) {
      if (!Chained.insert(C).second)
        break;
      Chain.push_back(C);
    }
    std::vector<size_t> Seg;
    for (BasicBlock *X : Chain)
      for (Instruction &I : *X) {
        if (barrier(I))
          Group(Seg);
        auto It = Member.find(&I);
        if (It != Member.end())
          Seg.push_back(It->second);
      }
    Group(Seg);
  }
  std::vector<Point> Rest;
  for (size_t i = 0; i < Points.size(); i++)
    if (!Joined[i])
      Rest.push_back(Points[i]);
  return Rest;
}

// UDSM (seed 000 §4.2: user-level DSM, no page faults): every load and
// store that may reach the heap first makes its page present. An access
// in a loop nest whose addresses ScalarEvolution bounds, with no call in
// the nest that may synchronize (only an acquire drops pages), is covered
// by one call sss_rcop_fetch_range(lo, hi) in the preheader of the
// outermost such loop (fetching more than the nest touches costs time,
// never correctness); the others get an inline test of their own: the
// heap range, then the page's byte in the presence map (sss_rcop_map),
// and a call sss_rcop_fetch(addr, len) only when it is 0.
struct Access {
  Instruction *I;
  Value *Ptr;
  Value *Len;  // i64
  bool OnePage; // known not to straddle a page boundary
};

struct Hoisted {
  Loop *L;
  const SCEV *Lo, *Hi; // [Lo, Hi): pointers
  // At most how many bytes the accesses touch over the nest (the trip
  // counts' product times their length), or null: unknown.
  const SCEV *Bytes = nullptr;
  Value *LoV = nullptr, *HiV = nullptr, *BytesV = nullptr;
  // The preheader's branch into the nest (it stays the last instruction
  // before the loop when notes split the block).
  Instruction *At = nullptr;
};

struct UdsmPlan {
  std::vector<Access> Each;
  std::vector<Hoisted> Ranges;
};

// The accesses of F that may reach the heap: loads and stores (scalar,
// vector, atomic, volatile), atomic read-modify-writes and
// compare-exchanges, memset destinations, memcpy/memmove sources and
// destinations.
std::vector<Access> heapAccesses(Function &F, const DataLayout &DL) {
  Type *I64 = Type::getInt64Ty(F.getContext());
  std::vector<Access> Out;
  auto Add = [&](Instruction *I, Value *P, Value *Len, Align A) {
    if (isPrivate(P))
      return;
    auto *C = dyn_cast<ConstantInt>(Len);
    bool One = C && C->getZExtValue() <= A.value() && C->getZExtValue() <= 4096;
    Out.push_back({I, P, Len, One});
  };
  auto Size = [&](Type *T) -> Value * {
    TypeSize Sz = DL.getTypeStoreSize(T);
    return Sz.isScalable() ? nullptr : ConstantInt::get(I64, Sz.getFixedValue());
  };
  for (Instruction &I : instructions(F)) {
    if (auto *L = dyn_cast<LoadInst>(&I)) {
      if (Value *N = Size(L->getType()))
        Add(&I, L->getPointerOperand(), N, L->getAlign());
    } else if (auto *S = dyn_cast<StoreInst>(&I)) {
      if (Value *N = Size(S->getValueOperand()->getType()))
        Add(&I, S->getPointerOperand(), N, S->getAlign());
    } else if (auto *A = dyn_cast<AtomicRMWInst>(&I)) {
      Add(&I, A->getPointerOperand(), Size(A->getValOperand()->getType()), A->getAlign());
    } else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I)) {
      Add(&I, X->getPointerOperand(), Size(X->getNewValOperand()->getType()), X->getAlign());
    } else if (auto *MT = dyn_cast<MemTransferInst>(&I)) {
      Add(&I, MT->getRawSource(), MT->getLength(), Align(1));
      Add(&I, MT->getRawDest(), MT->getLength(), Align(1));
    } else if (auto *MS = dyn_cast<MemSetInst>(&I)) {
      Add(&I, MS->getRawDest(), MS->getLength(), Align(1));
    }
  }
  return Out;
}

// The least (Max: greatest) value the address S (an i64) takes over the
// iterations of L, or null: S itself when invariant in L; for an affine
// recurrence of L, its first or last value, or the least or greatest of
// both when the step's sign is unknown.
const SCEV *extreme(const SCEV *S, Loop *L, bool Max, ScalarEvolution &SE) {
  if (SE.isLoopInvariant(S, L))
    return S;
  auto *AR = dyn_cast<SCEVAddRecExpr>(S);
  if (!AR || AR->getLoop() != L || !AR->isAffine())
    return nullptr;
  const SCEV *Step = AR->getStepRecurrence(SE);
  bool Up = SE.isKnownNonNegative(Step), Down = SE.isKnownNonPositive(Step);
  if ((Up && !Max) || (Down && Max))
    return AR->getStart();
  // The value in the last iteration: the back edges taken, or at most
  // their symbolic maximum (an early exit leaves sooner: the range is
  // wider than what runs, which only fetches more). Not a bound that
  // only says the induction variable does not wrap (a huge constant):
  // the range would wrap round.
  const SCEV *BTC = SE.getBackedgeTakenCount(L);
  if (isa<SCEVCouldNotCompute>(BTC))
    BTC = SE.getSymbolicMaxBackedgeTakenCount(L);
  if (isa<SCEVCouldNotCompute>(BTC) ||
      (isa<SCEVConstant>(BTC) && cast<SCEVConstant>(BTC)->getAPInt().getActiveBits() > 40))
    return nullptr;
  Type *T = Step->getType();
  if (BTC->getType()->getIntegerBitWidth() > T->getIntegerBitWidth())
    return nullptr;
  BTC = SE.getNoopOrZeroExtend(BTC, T);
  const SCEV *Last = SE.getAddExpr(AR->getStart(), SE.getMulExpr(Step, BTC));
  if (Up || Down)
    return Last;
  return Max ? SE.getUMaxExpr(AR->getStart(), Last) : SE.getUMinExpr(AR->getStart(), Last);
}

// E with every unsigned division by a value that may be 0 made a
// division by at least 1: a trip count such as (n - 1 - me) /u P, of
// `for (i = me; i < n; i += P)`, cannot be expanded before the loop as
// it is (the division would trap for P = 0). For P >= 1 nothing changes;
// with P = 0 the loop never leaves and only stores at its first address,
// which a bound from that address to anywhere still covers.
struct SafeDivisors : SCEVRewriteVisitor<SafeDivisors> {
  explicit SafeDivisors(ScalarEvolution &SE) : SCEVRewriteVisitor(SE) {}
  const SCEV *visitUDivExpr(const SCEVUDivExpr *E) {
    const SCEV *L = visit(E->getLHS()), *R = visit(E->getRHS());
    if (!SE.isKnownNonZero(R))
      R = SE.getUMaxExpr(R, SE.getOne(R->getType()));
    return SE.getUDivExpr(L, R);
  }
};

// The widest loop nest around I over which ScalarEvolution bounds the
// Len bytes at Ptr, and the bound [Lo, Hi) (i64 SCEVs of addresses,
// expandable in the nest's preheader): an affine recurrence per loop
// (see extreme()), every loop with a preheader and no call that may
// synchronize, going out to an enclosing loop only when the inner one is
// entered on each of its iterations. None when not even I's own loop
// bounds it; Why says where it stopped.
std::optional<Hoisted> boundNest(Instruction *I, Value *Ptr, uint64_t Len, const DataLayout &DL,
                                 LoopInfo &LI, ScalarEvolution &SE, DominatorTree &DT,
                                 const char *&Why) {
  Loop *L = LI.getLoopFor(I->getParent());
  std::optional<Hoisted> Best;
  Why = "outermost loop";
  if (!L || !SE.isSCEVable(Ptr->getType())) {
    Why = "not in a loop";
    return Best;
  }
  Type *I64 = Type::getInt64Ty(I->getContext());
  // Addresses as integers (their least and greatest need no base).
  const SCEV *Lo = SE.getPtrToIntExpr(SE.getSCEV(Ptr), I64);
  if (isa<SCEVCouldNotCompute>(Lo)) {
    Why = "address not an integer";
    return Best;
  }
  const SCEV *Hi = SE.getAddExpr(Lo, SE.getConstant(I64, Len));
  // Len times the iterations of the loops walked so far, at most.
  const SCEV *Count = SE.getConstant(I64, Len);
  for (; L; L = L->getParentLoop()) {
    BasicBlock *Pre = L->getLoopPreheader();
    if (!Pre || !syncFree(L)) {
      Why = Pre ? "a call that may synchronize" : "no preheader";
      break;
    }
    Lo = extreme(Lo, L, false, SE);
    Hi = Lo ? extreme(Hi, L, true, SE) : nullptr;
    if (!Lo || !Hi) {
      Why = "address not bounded in the loop";
      break;
    }
    if (Count) {
      const SCEV *BTC = SE.getSymbolicMaxBackedgeTakenCount(L);
      Count = isa<SCEVCouldNotCompute>(BTC) || BTC->getType()->getIntegerBitWidth() > 64
                  ? nullptr
                  : SE.getMulExpr(Count, SE.getAddExpr(SE.getZeroExtendExpr(BTC, I64),
                                                       SE.getOne(I64)));
    }
    SCEVExpander X(SE, DL, "sss.bound");
    SafeDivisors Safe(SE);
    Lo = Safe.visit(Lo);
    Hi = Safe.visit(Hi);
    if (Count)
      Count = Safe.visit(Count);
    if (X.isSafeToExpandAt(Lo, Pre->getTerminator()) &&
        X.isSafeToExpandAt(Hi, Pre->getTerminator())) {
      Best = Hoisted{L, Lo, Hi};
      if (Count && SE.isLoopInvariant(Count, L) &&
          X.isSafeToExpandAt(Count, Pre->getTerminator()))
        Best->Bytes = Count;
    }
    // Out to the enclosing loop only if L is entered on each of its
    // iterations (or skipped only by a guard of L whose condition is
    // the same on all of them, an empty trip count): a nest run
    // under a condition that varies (`if (owner(I, J) == me)`,
    // which the compiler may fold into the guard) would otherwise
    // cover the box of every iteration's range, most of which the
    // condition never lets run.
    if (Loop *Outer = L->getParentLoop()) {
      BasicBlock *Entry = Pre;
      if (BranchInst *G = L->getLoopGuardBranch())
        if (Outer->isLoopInvariant(G->getCondition()))
          Entry = G->getParent();
      if (!Outer->getLoopLatch() || !DT.dominates(Entry, Outer->getLoopLatch())) {
        Why = "entered under a condition";
        break;
      }
    }
  }
  return Best;
}

// Adds Best to Ranges: one range per loop and base, ranges at constant
// distances merged. Returns its index.
size_t mergeHoisted(std::vector<Hoisted> &Ranges, const Hoisted &Best, ScalarEvolution &SE) {
  for (size_t i = 0; i < Ranges.size(); i++) {
    Hoisted &H = Ranges[i];
    if (H.L != Best.L)
      continue;
    auto *DLo = dyn_cast<SCEVConstant>(SE.getMinusSCEV(Best.Lo, H.Lo));
    auto *DHi = dyn_cast<SCEVConstant>(SE.getMinusSCEV(Best.Hi, H.Hi));
    if (!DLo || !DHi)
      continue;
    if (DLo->getAPInt().isNegative())
      H.Lo = Best.Lo;
    if (DHi->getAPInt().isStrictlyPositive())
      H.Hi = Best.Hi;
    H.Bytes = H.Bytes && Best.Bytes ? SE.getAddExpr(H.Bytes, Best.Bytes) : nullptr;
    return i;
  }
  Ranges.push_back(Best);
  return Ranges.size() - 1;
}

// Expands each range's bounds (and, with WithBytes, its byte count) at
// its nest's preheader (before any block is split: the expander trusts
// the dominator tree).
void expandHoisted(std::vector<Hoisted> &Ranges, ScalarEvolution &SE, const DataLayout &DL,
                   const char *Name, bool WithBytes = false) {
  for (Hoisted &H : Ranges) {
    SCEVExpander X(SE, DL, Name);
    H.At = H.L->getLoopPreheader()->getTerminator();
    Type *I64 = Type::getInt64Ty(H.At->getContext());
    H.LoV = X.expandCodeFor(H.Lo, I64, H.At);
    H.HiV = X.expandCodeFor(H.Hi, I64, H.At);
    if (WithBytes)
      H.BytesV = H.Bytes ? X.expandCodeFor(H.Bytes, I64, H.At) : ConstantInt::get(I64, 0);
  }
}

// Plans F's presence checks: which accesses one range per loop nest
// covers, which are checked one by one.
UdsmPlan planUdsm(Function &F, const DataLayout &DL, LoopInfo *LI, ScalarEvolution *SE,
                  DominatorTree *DT) {
  UdsmPlan Plan;
  for (Access &A : heapAccesses(F, DL)) {
    auto *Len = dyn_cast<ConstantInt>(A.Len);
    std::optional<Hoisted> Best;
    const char *Why = "not in a loop";
    if (LI && Len && !isa<MemIntrinsic>(A.I))
      Best = boundNest(A.I, A.Ptr, Len->getZExtValue(), DL, *LI, *SE, *DT, Why);
    if (explain())
      errs() << "sss-rcop: " << F.getName() << ": UDSM: " << *A.I << ": "
             << (Best ? "loop range" : "checked by itself") << " (stopped: " << Why << ")\n";
    if (Best && explain())
      errs() << "    lo " << *Best->Lo << "\n    hi " << *Best->Hi << "\n";
    if (!Best) {
      Plan.Each.push_back(A);
      continue;
    }
    Total.PresentHoisted++;
    // One range per loop and base: ranges at constant distances merge.
    mergeHoisted(Plan.Ranges, *Best, *SE);
  }
  // Expanded now, while the analyses still describe the IR (no block is
  // split before the notes are planned).
  if (SE)
    expandHoisted(Plan.Ranges, *SE, DL, "sss.udsm");
  return Plan;
}

// Inserts the planned presence checks.
void applyUdsm(Function &F, UdsmPlan &Plan) {
  Module &M = *F.getParent();
  LLVMContext &C = M.getContext();
  Type *I64 = Type::getInt64Ty(C);
  Type *I8 = Type::getInt8Ty(C);
  Type *Ptr = PointerType::getUnqual(C);
  auto *Lo = cast<GlobalVariable>(M.getOrInsertGlobal("sss_rcop_lo", I64));
  auto *Span = cast<GlobalVariable>(M.getOrInsertGlobal("sss_rcop_span", I64));
  auto *Map = cast<GlobalVariable>(M.getOrInsertGlobal("sss_rcop_map", I64));
  FunctionCallee Fetch =
      M.getOrInsertFunction("sss_rcop_fetch", Type::getVoidTy(C), Ptr, I64);
  FunctionCallee FetchRange =
      M.getOrInsertFunction("sss_rcop_fetch_range", Type::getVoidTy(C), Ptr, Ptr);
  MDNode *Cold = MDBuilder(C).createBranchWeights(1, 1000);
  for (Hoisted &H : Plan.Ranges) {
    Instruction *At = H.At;
    IRBuilder<> B(At);
    Value *Base = B.CreateLoad(I64, Lo, "sss.lo");
    Value *End = B.CreateAdd(Base, B.CreateLoad(I64, Span, "sss.span"));
    Value *Meets =
        B.CreateAnd(B.CreateICmpUGT(H.HiV, Base), B.CreateICmpULT(H.LoV, End), "sss.meets");
    Instruction *Then = SplitBlockAndInsertIfThen(Meets, At, false);
    IRBuilder<> T(Then);
    T.CreateCall(FetchRange, {T.CreateIntToPtr(H.LoV, Ptr), T.CreateIntToPtr(H.HiV, Ptr)});
    Total.PresentRanges++;
  }
  for (Access &A : Plan.Each) {
    IRBuilder<> B(A.I);
    Value *Addr = B.CreatePtrToInt(A.Ptr, I64);
    Value *Off = B.CreateSub(Addr, B.CreateLoad(I64, Lo, "sss.lo"));
    Value *In = B.CreateICmpULT(Off, B.CreateLoad(I64, Span, "sss.span"), "sss.inheap");
    Instruction *Then = SplitBlockAndInsertIfThen(In, A.I, false);
    IRBuilder<> T(Then);
    Value *Len = T.CreateZExtOrTrunc(A.Len, I64);
    if (isa<MemIntrinsic>(A.I)) {
      // A length known only at run time: the runtime walks the map.
      T.CreateCall(Fetch, {A.Ptr, Len});
    } else {
      Value *MapP = T.CreateIntToPtr(T.CreateLoad(I64, Map, "sss.map"), Ptr);
      auto Byte = [&](Value *O) {
        return T.CreateLoad(I8, T.CreateGEP(I8, MapP, T.CreateLShr(O, 12)), "sss.present");
      };
      Value *Here = Byte(Off);
      if (!A.OnePage)
        Here = T.CreateAnd(Here, Byte(T.CreateAdd(Off, T.CreateSub(Len, T.getInt64(1)))));
      Value *Absent = T.CreateICmpEQ(Here, T.getInt8(0), "sss.absent");
      Instruction *Get = SplitBlockAndInsertIfThen(Absent, Then, false, Cold);
      IRBuilder<>(Get).CreateCall(Fetch, {A.Ptr, Len});
    }
    Total.Present++;
  }
}

// The attribute that marks a function already instrumented.
constexpr const char *Done = "sss-rcop-done";

// Back-off (seed 000 §4.3: code that sleeps for a moment on its own when
// the network is saturated): at each latch of a loop that notes in its
// own blocks (a note per iteration, or a range note at an inner loop's
// exit), a tick of sss_rcop_ticks and, every 256th, a call of
// sss_rcop_backoff, which looks at the task's retransmissions and
// yields while they grow. A load, an add, a store and a rarely taken
// branch per iteration of loops that already call out to note.
void backoffChecks(Function &F) {
  Module &M = *F.getParent();
  LLVMContext &C = M.getContext();
  Type *I64 = Type::getInt64Ty(C);
  auto *Ticks = cast<GlobalVariable>(M.getOrInsertGlobal("sss_rcop_ticks", I64));
  FunctionCallee Back = M.getOrInsertFunction("sss_rcop_backoff", Type::getVoidTy(C));
  DominatorTree DT(F);
  LoopInfo LI(DT);
  std::vector<BasicBlock *> Latches;
  for (Loop *L : LI.getLoopsInPreorder()) {
    bool Notes = false;
    for (BasicBlock *BB : L->blocks())
      if (LI.getLoopFor(BB) == L)
        for (Instruction &I : *BB)
          if (auto *CI = dyn_cast<CallInst>(&I))
            if (Function *Fn = CI->getCalledFunction())
              Notes |= Fn->getName() == "sss_rcop_note" || Fn->getName() == "sss_rcop_cursor_end";
    if (Notes)
      for (BasicBlock *Latch : L->getBlocks())
        if (L->isLoopLatch(Latch))
          Latches.push_back(Latch);
  }
  for (BasicBlock *Latch : Latches) {
    IRBuilder<> B(Latch->getTerminator());
    LoadInst *T = B.CreateAlignedLoad(I64, Ticks, Align(8), "sss.ticks");
    T->setAtomic(AtomicOrdering::Monotonic);
    Value *T1 = B.CreateAdd(T, B.getInt64(1));
    B.CreateAlignedStore(T1, Ticks, Align(8))->setAtomic(AtomicOrdering::Monotonic);
    Value *Due = B.CreateICmpEQ(B.CreateAnd(T1, B.getInt64(255)), B.getInt64(0));
    Instruction *Then = SplitBlockAndInsertIfThen(Due, Latch->getTerminator(), false,
                                                  MDBuilder(C).createBranchWeights(1, 255));
    IRBuilder<>(Then).CreateCall(Back);
    Total.Checks++;
  }
}

// Instruments F: range notes at loop exits where stores coalesce (when
// Coalesce), a note after every other store that may reach the heap.
void instrument(Function &F, FunctionAnalysisManager &FAM, bool Coalesce, bool Backoff,
                bool Udsm) {
  Module &M = *F.getParent();
  LLVMContext &C = M.getContext();
  const DataLayout &DL = M.getDataLayout();
  Type *I64 = Type::getInt64Ty(C);
  Type *Ptr = PointerType::getUnqual(C);
  auto *Lo = cast<GlobalVariable>(M.getOrInsertGlobal("sss_rcop_lo", I64));
  auto *Span = cast<GlobalVariable>(M.getOrInsertGlobal("sss_rcop_span", I64));
  FunctionCallee Note = M.getOrInsertFunction("sss_rcop_note", Type::getVoidTy(C), Ptr, I64);
  F.addFnAttr(Done);
  // Inline assembly given a pointer that may reach the heap may store
  // there: no pass sees those stores, so the compiler says so.
  for (Instruction &I : instructions(F))
    if (auto *CB = dyn_cast<CallBase>(&I))
      if (CB->isInlineAsm() && !CB->onlyReadsMemory())
        for (Value *A : CB->args())
          if (A->getType()->isPointerTy() && !isPrivate(A)) {
            errs() << "sss-rcop: warning: " << F.getName()
                   << ": inline assembly is given a pointer that may reach the DSM heap; "
                      "its stores are not noted (note them, or run with SSS_DSM_WRITES=trap)\n";
            break;
          }
  // Cond (optional, i1): the note is needed at all (no diffed range
  // covers the store).
  auto addNote = [&](IRBuilder<> &B, Value *P, Value *Len, Value *Cond = nullptr) {
    Value *Addr = B.CreatePtrToInt(P, I64);
    Value *Off = B.CreateSub(Addr, B.CreateLoad(I64, Lo, "sss.lo"));
    Value *In = B.CreateICmpULT(Off, B.CreateLoad(I64, Span, "sss.span"), "sss.inheap");
    if (Cond)
      In = B.CreateAnd(Cond, In);
    Instruction *Then = SplitBlockAndInsertIfThen(In, &*B.GetInsertPoint(), false);
    IRBuilder<> T(Then);
    T.CreateCall(Note, {P, T.CreateZExtOrTrunc(Len, I64)});
  };
  std::vector<Point> Points;
  LoopInfo *LI = nullptr;
  ScalarEvolution *SE = nullptr;
  DominatorTree *DT = nullptr;
  if (Coalesce) {
    LI = &FAM.getResult<LoopAnalysis>(F);
    SE = &FAM.getResult<ScalarEvolutionAnalysis>(F);
    DT = &FAM.getResult<DominatorTreeAnalysis>(F);
  }
  // UDSM: planned (and loop ranges expanded) first, inserted last.
  std::optional<UdsmPlan> Present;
  if (Udsm)
    Present = planUdsm(F, DL, LI, SE, DT);
  // Cursor stores (and their increments), noted by bucket at loop exit
  // or diffed.
  struct CursorPlan {
    Cursor Cu;
    Value *N;     // the slots copied
    Value *Backs; // the back edges the loop takes at most (null: unknown)
  };
  std::vector<CursorPlan> Cursors;
  SmallPtrSet<Instruction *, 8> ByCursor;
  if (Coalesce)
    for (Instruction &I : instructions(F))
      if (auto *S = dyn_cast<StoreInst>(&I))
        if (!isPrivate(S->getPointerOperand()) && !ByCursor.count(S))
          if (auto Cu = cursor(S, *LI, DL)) {
            IRBuilder<> B(Cu->L->getLoopPreheader()->getTerminator());
            if (Value *U = bound(Cu->D, Cu->L, B)) {
              Value *N = B.CreateAdd(U, B.getInt64(1), "sss.slots");
              // Never copy past an array of known size.
              uint64_t Bytes;
              if (getObjectSize(Cu->P, Bytes, DL, nullptr))
                N = B.CreateBinaryIntrinsic(Intrinsic::umin, N, B.getInt64(Bytes / Cu->Width));
              // The trip count bounds how far the cursors move: the
              // stores can be diffed (expanded now, before any split).
              Value *Backs = nullptr;
              if (diffing() && wholeWords(Cu->Elem, Cu->S->getAlign())) {
                const SCEV *BTC = SE->getBackedgeTakenCount(Cu->L);
                if (isa<SCEVCouldNotCompute>(BTC))
                  BTC = SE->getSymbolicMaxBackedgeTakenCount(Cu->L);
                SCEVExpander X(*SE, DL, "sss.cursor");
                if (!isa<SCEVCouldNotCompute>(BTC) && BTC->getType()->isIntegerTy() &&
                    BTC->getType()->getIntegerBitWidth() <= 64 &&
                    X.isSafeToExpandAt(BTC, Cu->L->getLoopPreheader()->getTerminator()))
                  Backs = B.CreateZExt(X.expandCodeFor(BTC, nullptr, &*B.GetInsertPoint()), I64,
                                       "sss.backs");
              }
              Cursors.push_back({*Cu, N, Backs});
              ByCursor.insert(Cu->S);
              ByCursor.insert(Cu->Inc);
            }
          }
  std::vector<Range> Ranges;
  // What coalesced stores write per iteration of the loops their notes
  // cover; the stores that did not coalesce, with where they stopped.
  std::vector<Level> Covering;
  std::vector<std::pair<Point, std::optional<Level>>> Uncoalesced;
  // Stores that may be coalesced, by block.
  MapVector<BasicBlock *, std::vector<Point>> Candidates;
  for (Instruction &I : instructions(F)) {
    Value *P = nullptr;
    Value *Len = nullptr;
    if (auto *S = dyn_cast<StoreInst>(&I)) {
      TypeSize Sz = DL.getTypeStoreSize(S->getValueOperand()->getType());
      if (Sz.isScalable())
        continue;
      P = S->getPointerOperand();
      Len = ConstantInt::get(I64, Sz.getFixedValue());
    } else if (auto *A = dyn_cast<AtomicRMWInst>(&I)) {
      P = A->getPointerOperand();
      Len = ConstantInt::get(I64, DL.getTypeStoreSize(A->getValOperand()->getType()).getFixedValue());
    } else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I)) {
      P = X->getPointerOperand();
      Len = ConstantInt::get(I64, DL.getTypeStoreSize(X->getNewValOperand()->getType()).getFixedValue());
    } else if (auto *MI = dyn_cast<MemIntrinsic>(&I)) {
      P = MI->getRawDest();
      Len = MI->getLength();
    } else {
      continue;
    }
    if (ByCursor.count(&I))
      continue;
    if (isPrivate(P)) {
      Total.Skipped++;
      continue;
    }
    if (LI && isa<StoreInst>(I) && isa<ConstantInt>(Len)) {
      Candidates[I.getParent()].push_back({&I, P, Len});
      continue;
    }
    Points.push_back({&I, P, Len});
  }
  // Stores of one block at constant distances from each other that
  // together cover consecutive bytes form one store; each such group
  // is coalesced over its loops, or its stores are noted one by one.
  for (auto &[BB, Stores] : Candidates) {
    std::vector<bool> Taken(Stores.size(), false);
    for (size_t i = 0; i < Stores.size(); i++) {
      if (Taken[i])
        continue;
      const SCEV *Base = SE->getSCEV(Stores[i].Ptr);
      std::vector<std::pair<int64_t, size_t>> Members; // offset, index
      for (size_t j = i; j < Stores.size(); j++) {
        if (Taken[j])
          continue;
        auto *D = dyn_cast<SCEVConstant>(SE->getMinusSCEV(SE->getSCEV(Stores[j].Ptr), Base));
        if (D)
          Members.push_back({D->getAPInt().getSExtValue(), j});
      }
      std::sort(Members.begin(), Members.end());
      int64_t Lo = Members.front().first, End = Lo;
      bool Contiguous = true;
      for (auto &[Off, j] : Members) {
        if (Off > End) {
          Contiguous = false;
          break;
        }
        End = std::max<int64_t>(End, Off + (int64_t)cast<ConstantInt>(Stores[j].Len)->getZExtValue());
      }
      std::optional<Range> R;
      std::vector<Level> Trace;
      if (Contiguous) {
        const SCEV *Start = SE->getAddExpr(Base, SE->getConstant(Base->getType(), Lo, true));
        R = plan(Start, End - Lo, Stores[i].Ptr, Lo, BB, *LI, *SE, *DT, Trace);
        if (R) {
          BasicBlock *Exit = R->L->getUniqueExitBlock();
          SCEVExpander X(*SE, DL, "sss.range");
          Instruction *At = &*Exit->getFirstInsertionPt();
          if (!X.isSafeToExpandAt(R->Start, At) || (R->Len && !X.isSafeToExpandAt(R->Len, At)))
            R.reset();
        }
      }
      if (R) {
        Ranges.push_back(*R);
        for (Level &E : Trace)
          if (R->L->contains(E.L))
            Covering.push_back(E);
        for (auto &M2 : Members) {
          Taken[M2.second] = true;
          Total.Coalesced++;
        }
      } else {
        Taken[i] = true;
        Uncoalesced.push_back({Stores[i], Trace.empty() ? std::nullopt : std::optional(Trace.back())});
      }
    }
  }
  // A store that does not coalesce by itself but writes, in each
  // iteration of the loop where it stopped, a subset of what a coalesced
  // one writes there (the same bytes again: a column computed, then
  // scaled) is covered by that one's note, placed after both.
  for (auto &[Pt, Last] : Uncoalesced) {
    if (Last && std::find(Covering.begin(), Covering.end(), *Last) != Covering.end()) {
      Total.Coalesced++;
      Total.Covered++;
      continue;
    }
    Points.push_back(Pt);
  }
  // Diffed ranges: a store in a loop that is noted by itself (it did not
  // coalesce) but whose bytes ScalarEvolution bounds over a loop nest is
  // covered by one sss_rcop_twin_range(lo, hi, bytes) in the nest's preheader
  // (the heap then diffs the range's pages at the release); its own note
  // runs only when the heap refused the range. Planned and expanded while
  // the analyses still hold.
  std::vector<Hoisted> Diffed;
  std::vector<std::pair<Point, size_t>> ByDiff; // the store, its range
  if (Coalesce && diffing()) {
    std::vector<Point> Rest;
    for (Point &Pt : Points) {
      auto *Len = dyn_cast<ConstantInt>(Pt.Len);
      auto *S = dyn_cast<StoreInst>(Pt.I);
      auto *MS = dyn_cast<MemSetInst>(Pt.I);
      bool Whole =
          Len && Len->getValue().getActiveBits() < 40 &&
          ((S && S->isSimple() && wholeWords(Len->getZExtValue(), S->getAlign())) ||
           (MS && !MS->isVolatile() && MS->getDestAlign() &&
            wholeWords(Len->getZExtValue(), *MS->getDestAlign())));
      std::optional<Hoisted> H;
      const char *Why = "not a plain store of whole aligned words";
      if (Whole)
        H = boundNest(Pt.I, Pt.Ptr, Len->getZExtValue(), DL, *LI, *SE, *DT, Why);
      if (explain() && LI->getLoopFor(Pt.I->getParent()))
        errs() << "sss-rcop: " << F.getName() << ": " << *Pt.I << ": "
               << (H ? "diffed range" : "not diffed") << " (stopped: " << Why << ")\n";
      if (H && explain())
        errs() << "    lo " << *H->Lo << "\n    hi " << *H->Hi << "\n    bytes "
               << (H->Bytes ? *H->Bytes : *SE->getCouldNotCompute()) << "\n";
      if (!H) {
        Rest.push_back(Pt);
        continue;
      }
      ByDiff.push_back({Pt, mergeHoisted(Diffed, *H, *SE)});
    }
    Points = std::move(Rest);
    expandHoisted(Diffed, *SE, DL, "sss.diff", true);
  }
  // Straight-line stores, planned while the analyses still hold.
  std::vector<Joint> Joints;
  if (Coalesce)
    Points = join(F, Points, *LI, *SE, *DT, FAM.getResult<PostDominatorTreeAnalysis>(F), Joints);
  // One note per loop exit and range: stores that coalesce to the same
  // range (a block written twice in one nest) are noted once.
  std::vector<Range> Unique;
  for (Range &R : Ranges) {
    bool Dup = false;
    for (Range &U : Unique)
      Dup |= U.L == R.L && U.Start == R.Start && U.Len == R.Len && U.Last == R.Last &&
             U.Tail == R.Tail;
    if (!Dup)
      Unique.push_back(R);
  }
  // Range notes first, while the analyses still describe the IR: every
  // start and length is expanded before any note splits a block (the
  // expander trusts the dominator tree, which the splits would outdate).
  std::vector<std::tuple<Instruction *, Value *, Value *>> Expanded;
  for (Range &R : Unique) {
    SCEVExpander X(*SE, DL, "sss.range");
    Instruction *At = &*R.L->getUniqueExitBlock()->getFirstInsertionPt();
    Value *Start = X.expandCodeFor(R.Start, Ptr, At);
    Value *Len;
    if (R.Len) {
      Len = X.expandCodeFor(R.Len, I64, At);
    } else {
      // Last dominates the latch, the exit's only predecessor.
      IRBuilder<> B(At);
      Value *End = B.CreateAdd(B.CreatePtrToInt(R.Last, I64), B.getInt64(R.Tail));
      Len = B.CreateSub(End, B.CreatePtrToInt(Start, I64), "sss.len");
    }
    Expanded.push_back({At, Start, Len});
  }
  for (auto &[At, Start, Len] : Expanded) {
    IRBuilder<> B(At);
    addNote(B, Start, Len);
    Total.RangeNotes++;
  }
  // Cursors: a copy of the slots at entry, the buckets noted at exit.
  // Without a copy (trap mode, no heap, an implausible slot count) each
  // store is noted as usual.
  FunctionCallee Begin = M.getOrInsertFunction("sss_rcop_cursor_begin", Ptr, Ptr, I64, I64);
  FunctionCallee Twin =
      M.getOrInsertFunction("sss_rcop_cursor_twin", Ptr, Ptr, I64, I64, Ptr, I64, I64);
  FunctionCallee End =
      M.getOrInsertFunction("sss_rcop_cursor_end", Type::getVoidTy(C), Ptr, Ptr, I64, I64, Ptr, I64);
  for (auto &[Cu, N, Backs] : Cursors) {
    IRBuilder<> Pre(Cu.L->getLoopPreheader()->getTerminator());
    // With a bound on the trips, the heap may diff the stores instead
    // (the copy is then SSS_RCOP_DIFFED: no bucket notes).
    Value *Snap =
        Backs ? Pre.CreateCall(Twin, {Cu.P, N, Pre.getInt64(Cu.Width), Cu.Dst,
                                      Pre.getInt64(Cu.Elem), Backs},
                               "sss.cursors")
              : Pre.CreateCall(Begin, {Cu.P, N, Pre.getInt64(Cu.Width)}, "sss.cursors");
    if (Backs)
      Total.CursorTwins++;
    IRBuilder<> Out(&*Cu.L->getUniqueExitBlock()->getFirstInsertionPt());
    Out.CreateCall(End, {Snap, Cu.P, N, Out.getInt64(Cu.Width), Cu.Dst, Out.getInt64(Cu.Elem)});
    for (StoreInst *St : {Cu.S, Cu.Inc}) {
      if (St == Cu.Inc && isPrivate(St->getPointerOperand()))
        continue;
      Instruction *At = St->getNextNode();
      IRBuilder<> B(At);
      // Slots at or above the bound are not in the copy.
      Value *Outside = B.CreateICmpUGE(B.CreateZExtOrTrunc(Cu.D, I64), N);
      Instruction *Then =
          SplitBlockAndInsertIfThen(B.CreateOr(B.CreateIsNull(Snap), Outside), At, false);
      IRBuilder<> T(Then);
      addNote(T, St->getPointerOperand(),
              ConstantInt::get(I64, St == Cu.S ? Cu.Elem : Cu.Width));
    }
    Total.Cursors++;
  }
  // Diffed ranges: the call in the preheader (when the range meets the
  // heap), and the stores it covers noted only when it returned 0.
  FunctionCallee TwinRange =
      M.getOrInsertFunction("sss_rcop_twin_range", Type::getInt32Ty(C), Ptr, Ptr, I64);
  std::vector<Value *> Needed; // per range: i1, its stores need notes
  for (Hoisted &H : Diffed) {
    IRBuilder<> B(H.At);
    Value *Base = B.CreateLoad(I64, Lo, "sss.lo");
    Value *End = B.CreateAdd(Base, B.CreateLoad(I64, Span, "sss.span"));
    Value *Meets =
        B.CreateAnd(B.CreateICmpUGT(H.HiV, Base), B.CreateICmpULT(H.LoV, End), "sss.meets");
    BasicBlock *Head = H.At->getParent();
    Instruction *Then = SplitBlockAndInsertIfThen(Meets, H.At, false);
    IRBuilder<> T(Then);
    Value *Got = T.CreateCall(
        TwinRange, {T.CreateIntToPtr(H.LoV, Ptr), T.CreateIntToPtr(H.HiV, Ptr), H.BytesV},
        "sss.diffed");
    IRBuilder<> Tail(&H.At->getParent()->front());
    PHINode *Phi = Tail.CreatePHI(Type::getInt32Ty(C), 2, "sss.diffed");
    Phi->addIncoming(Got, Then->getParent());
    Phi->addIncoming(ConstantInt::get(Type::getInt32Ty(C), 0), Head);
    IRBuilder<> After(H.At);
    Needed.push_back(
        After.CreateICmpEQ(Phi, ConstantInt::get(Type::getInt32Ty(C), 0), "sss.note"));
    Total.DiffedRanges++;
  }
  for (auto &[Pt, K] : ByDiff) {
    IRBuilder<> B(Pt.I->getNextNode());
    addNote(B, Pt.Ptr, Pt.Len, Needed[K]);
    Total.Diffed++;
  }
  for (Point &Pt : Points) {
    IRBuilder<> B(Pt.I->getNextNode());
    addNote(B, Pt.Ptr, Pt.Len);
  }
  Total.Each += Points.size();
  for (Joint &J : Joints) {
    IRBuilder<> B(J.At->getNextNode());
    addNote(B, J.Ptr, ConstantInt::get(I64, J.Len));
  }
  if (Present)
    applyUdsm(F, *Present);
  if (Backoff)
    backoffChecks(F);
}

// The runtime itself is never instrumented.
bool isRuntime(const Module &M) {
  const Function *N = M.getFunction("sss_rcop_note");
  return N && !N->isDeclaration();
}

// Protocol switching by annotation: `SSS_PROTOCOL(name)` (sss_parmacs.h)
// on a variable or a struct field makes the G_MALLOC stored into it an
// sss_pm_malloc_with(len, protocol). Runs first in the pipeline (also at
// O0), while the annotated variables and their stores are still there.
struct RcopProtocols : PassInfoMixin<RcopProtocols> {
  // sss_dsm_protocol_t values.
  static int code(StringRef Name) {
    static const char *Names[] = {"ulrc", "invalidate", "home_update", "update", "update_drct",
                                  "home_only"};
    for (int i = 0; i < 6; i++)
      if (Name == Names[i])
        return i + 1;
    return -1;
  }

  // The protocol an annotation string asks for: 0 when it is not ours.
  static int annotation(Module &M, Value *Str) {
    auto *G = dyn_cast<GlobalVariable>(Str->stripPointerCasts());
    if (!G || !G->hasInitializer())
      return 0;
    auto *CDA = dyn_cast<ConstantDataArray>(G->getInitializer());
    if (!CDA || !CDA->isCString())
      return 0;
    StringRef S = CDA->getAsCString();
    if (!S.consume_front("sss-protocol:"))
      return 0;
    int C = code(S);
    if (C < 0)
      M.getContext().emitError("SSS_PROTOCOL(" + S +
                               "): expected ulrc, invalidate, home_update, update, "
                               "update_drct or home_only");
    return C;
  }

  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    if (isRuntime(M))
      return PreservedAnalyses::all();
    Function *Malloc = M.getFunction("sss_pm_malloc");
    if (!Malloc)
      return PreservedAnalyses::all();
    // Annotated storage: globals, locals (their allocas) and field
    // addresses (the results of llvm.ptr.annotation).
    DenseMap<Value *, int> Proto;
    if (GlobalVariable *GA = M.getGlobalVariable("llvm.global.annotations"))
      if (auto *Arr = dyn_cast<ConstantArray>(GA->getInitializer()))
        for (Value *Op : Arr->operands())
          if (auto *E = dyn_cast<ConstantStruct>(Op))
            if (E->getNumOperands() >= 2)
              if (int C = annotation(M, E->getOperand(1)); C > 0)
                Proto[E->getOperand(0)->stripPointerCasts()] = C;
    for (Function &F : M)
      for (Instruction &I : instructions(F))
        if (auto *II = dyn_cast<IntrinsicInst>(&I)) {
          Intrinsic::ID ID = II->getIntrinsicID();
          if (ID == Intrinsic::var_annotation || ID == Intrinsic::ptr_annotation)
            if (int C = annotation(M, II->getArgOperand(1)); C > 0)
              Proto[ID == Intrinsic::var_annotation ? II->getArgOperand(0)->stripPointerCasts()
                                                    : II] = C;
        }
    if (Proto.empty())
      return PreservedAnalyses::all();
    LLVMContext &C = M.getContext();
    FunctionCallee With = M.getOrInsertFunction(
        "sss_pm_malloc_with", Malloc->getFunctionType()->getReturnType(),
        Malloc->getFunctionType()->getParamType(0), Type::getInt32Ty(C));
    std::vector<std::pair<CallInst *, int>> Calls;
    for (Function &F : M)
      for (Instruction &I : instructions(F)) {
        auto *S = dyn_cast<StoreInst>(&I);
        if (!S)
          continue;
        auto *Call = dyn_cast<CallInst>(S->getValueOperand()->stripPointerCasts());
        if (!Call || Call->getCalledFunction() != Malloc)
          continue;
        auto It = Proto.find(S->getPointerOperand()->stripPointerCasts());
        if (It != Proto.end() &&
            std::find_if(Calls.begin(), Calls.end(), [&](auto &P) { return P.first == Call; }) ==
                Calls.end())
          Calls.push_back({Call, It->second});
      }
    for (auto &[Call, Code] : Calls) {
      IRBuilder<> B(Call);
      CallInst *New =
          B.CreateCall(With, {Call->getArgOperand(0), ConstantInt::get(Type::getInt32Ty(C), Code)});
      Call->replaceAllUsesWith(New);
      Call->eraseFromParent();
    }
    unsigned Switched = Calls.size();
    if (stats() && Switched)
      errs() << "sss-rcop: " << M.getName() << ": " << Switched
             << " allocations with an annotated protocol\n";
    return Switched ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }
};

// At O1 and above: before the loop vectorizer, while loops are still in
// the simple form ScalarEvolution plans ranges on (vectorized bodies
// with scalar remainders and runtime checks would each need a note of
// their own). Dead stores are gone by then; the notes are opaque calls,
// so no later pass moves a store past its note.
struct RcopLoops : PassInfoMixin<RcopLoops> {
  PreservedAnalyses run(Function &F, FunctionAnalysisManager &FAM) {
    if (F.hasFnAttribute(Done) || isRuntime(*F.getParent()))
      return PreservedAnalyses::all();
    instrument(F, FAM, coalescing(), backingOff(), udsm());
    return PreservedAnalyses::none();
  }
};

// Last in the pipeline (the only place at O0): whatever was not
// instrumented before the vectorizer, then the report.
struct Rcop : PassInfoMixin<Rcop> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM) {
    if (isRuntime(M))
      return PreservedAnalyses::all();
    auto &FAM = MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
    bool Changed = false;
    for (Function &F : M) {
      if (F.isDeclaration() || F.hasFnAttribute(Done))
        continue;
      instrument(F, FAM, coalescing(), backingOff(), udsm());
      FAM.invalidate(F, PreservedAnalyses::none());
      Changed = true;
    }
    // Before main: heaps are opened without userfaultfd (UDSM), or to
    // send each note alone (no combining).
    auto ctor = [&](const char *Name, const char *Callee) {
      LLVMContext &C = M.getContext();
      Function *Ctor = Function::Create(FunctionType::get(Type::getVoidTy(C), false),
                                        GlobalValue::InternalLinkage, Name, M);
      Ctor->addFnAttr(Done);
      IRBuilder<> B(BasicBlock::Create(C, "", Ctor));
      B.CreateCall(M.getOrInsertFunction(Callee, Type::getVoidTy(C)));
      B.CreateRetVoid();
      appendToGlobalCtors(M, Ctor, 0);
      Changed = true;
    };
    if (udsm())
      ctor("sss.rcop.udsm", "sss_rcop_udsm");
    if (!combining())
      ctor("sss.rcop.separate", "sss_rcop_separate");
    if (stats() && udsm())
      errs() << "sss-rcop: " << M.getName() << ": UDSM: " << Total.Present
             << " accesses checked one by one, " << Total.PresentHoisted << " covered by "
             << Total.PresentRanges << " loop range fetches\n";
    if (stats())
      errs() << "sss-rcop: " << M.getName() << ": " << Total.Each << " stores instrumented, "
             << Total.Coalesced << " coalesced into " << Total.RangeNotes << " range notes, "
             << Total.Skipped << " private"
             << (Total.Covered ? " (" + std::to_string(Total.Covered) +
                                     " of the coalesced covered by another's note)"
                               : std::string())
             << (Total.Cursors ? ", " + std::to_string(Total.Cursors) + " cursor loops" +
                                     (Total.CursorTwins
                                          ? " (" + std::to_string(Total.CursorTwins) + " diffed)"
                                          : std::string())
                               : std::string())
             << (Total.Diffed ? ", " + std::to_string(Total.Diffed) + " stores in loops in " +
                                    std::to_string(Total.DiffedRanges) + " diffed ranges"
                              : std::string())
             << (Total.Joined ? ", " + std::to_string(Total.Joined) + " straight-line stores in " +
                                    std::to_string(Total.JoinedNotes) + " joint notes"
                              : std::string())
             << (Total.Checks ? ", " + std::to_string(Total.Checks) + " back-off checks"
                              : std::string())
             << "\n";
    return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
  }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "sss-rcop", "0.2", [](PassBuilder &PB) {
            PB.registerPipelineStartEPCallback(
                [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(RcopProtocols()); });
            PB.registerVectorizerStartEPCallback(
                [](FunctionPassManager &FPM, OptimizationLevel) {
                  // Preheaders and dedicated exits, where range notes go.
                  FPM.addPass(LoopSimplifyPass());
                  FPM.addPass(RcopLoops());
                });
            PB.registerOptimizerLastEPCallback(
                [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(Rcop()); });
          }};
}
