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
// len). The pass runs last in the optimization pipeline (also at -O0),
// so dead stores are gone before it counts them.
//
// SSS_RCOP_OPT selects the optimization: `no` (the seeds' NO row: one
// note per dynamic store) or `ia` (the default: coalescing). Under `ia`
// a store in a loop that writes consecutive bytes on every iteration
// (an affine address with a step of its own size, ScalarEvolution) is
// noted once, as one range, where the loop exits; when the loop's ranges
// are themselves consecutive across an enclosing loop, once where that
// loop exits, and so on outwards. A store is coalesced only when the
// range is exactly what it writes: it runs on every iteration, the loop
// leaves only through its latch, and the trip count is computable.

#include "llvm/ADT/MapVector.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Analysis/ScalarEvolution.h"
#include "llvm/Analysis/ScalarEvolutionExpressions.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include <cstdlib>
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/ScalarEvolutionExpander.h"

using namespace llvm;

// SSS_RCOP_STATS=1 prints what was instrumented (clang reads -mllvm
// options before it loads a pass plugin, so settings come from the
// environment, which `sss cc` sets).
static bool stats() {
  const char *S = getenv("SSS_RCOP_STATS");
  return S && *S && *S != '0';
}

namespace {

// True when no store through P can reach the heap: its underlying
// object is a stack slot or a global variable.
bool isPrivate(const Value *P) {
  const Value *U = getUnderlyingObject(P, 0);
  return isa<AllocaInst>(U) || isa<GlobalVariable>(U);
}

struct Point {
  Instruction *I;
  Value *Ptr;
  Value *Len; // i64
};

bool coalescing() {
  const char *S = getenv("SSS_RCOP_OPT");
  return !(S && std::string(S) == "no");
}

// A range note planned at the exit of a loop: start address and length
// in bytes, as SCEVs valid there.
struct Range {
  Loop *L;
  const SCEV *Start;
  const SCEV *Len;
};

// Whether L runs every iteration to its latch and leaves through a
// dedicated exit, with a computable trip count; the count.
const SCEV *wholeIterations(Loop *L, ScalarEvolution &SE) {
  BasicBlock *Latch = L->getLoopLatch();
  if (!Latch || L->getExitingBlock() != Latch || !L->getLoopPreheader())
    return nullptr;
  // The latch is the only block leaving the loop, so it is the exit's
  // only predecessor in the loop; others outside (a guard) get a block of
  // the loop's own on the edge when the note is placed.
  if (!L->getUniqueExitBlock())
    return nullptr;
  const SCEV *BTC = SE.getBackedgeTakenCount(L);
  if (isa<SCEVCouldNotCompute>(BTC))
    return nullptr;
  return SE.getAddExpr(SE.getTruncateOrZeroExtend(BTC, SE.getEffectiveSCEVType(BTC->getType())),
                       SE.getOne(BTC->getType()));
}

// The widest range a store of Size bytes at Ptr (in block BB) writes
// over whole loops, or none when it cannot be coalesced.
std::optional<Range> plan(const SCEV *Start, uint64_t Size, BasicBlock *BB, LoopInfo &LI,
                          ScalarEvolution &SE, DominatorTree &DT) {
  Loop *L = LI.getLoopFor(BB);
  if (!L)
    return std::nullopt;
  Type *I64 = Type::getInt64Ty(BB->getContext());
  const SCEV *Len = SE.getConstant(I64, Size);
  BasicBlock *Runs = BB; // a block that runs once per iteration of L
  std::optional<Range> Best;
  for (; L; L = L->getParentLoop()) {
    if (!DT.dominates(Runs, L->getLoopLatch() ? L->getLoopLatch() : Runs) ||
        !L->getLoopLatch())
      break;
    const SCEV *Trips = wholeIterations(L, SE);
    auto *AR = dyn_cast<SCEVAddRecExpr>(Start);
    if (!Trips || !AR || AR->getLoop() != L || !AR->isAffine())
      break;
    // Consecutive: the step equals the bytes written per iteration.
    const SCEV *Step = AR->getStepRecurrence(SE);
    auto *CStep = dyn_cast<SCEVConstant>(Step);
    auto *CLen = dyn_cast<SCEVConstant>(Len);
    if (!CStep || !CLen || CStep->getAPInt().getSExtValue() != CLen->getAPInt().getSExtValue())
      break;
    const SCEV *T64 = SE.getTruncateOrZeroExtend(Trips, I64);
    Start = AR->getStart();
    Len = SE.getMulExpr(Len, T64);
    if (!SE.isLoopInvariant(Start, L) || !SE.isLoopInvariant(Len, L))
      break;
    Best = Range{L, Start, Len};
    Runs = L->getHeader();
  }
  return Best;
}

struct Rcop : PassInfoMixin<Rcop> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &MAM) {
    // The runtime itself is never instrumented.
    if (M.getFunction("sss_rcop_note") && !M.getFunction("sss_rcop_note")->isDeclaration())
      return PreservedAnalyses::all();
    LLVMContext &C = M.getContext();
    const DataLayout &DL = M.getDataLayout();
    Type *I64 = Type::getInt64Ty(C);
    Type *Ptr = PointerType::getUnqual(C);
    auto *Lo = cast<GlobalVariable>(M.getOrInsertGlobal("sss_rcop_lo", I64));
    auto *Span = cast<GlobalVariable>(M.getOrInsertGlobal("sss_rcop_span", I64));
    FunctionCallee Note =
        M.getOrInsertFunction("sss_rcop_note", Type::getVoidTy(C), Ptr, I64);

    std::vector<Point> Points;
    unsigned Skipped = 0, Coalesced = 0, RangeNotes = 0;
    auto &FAM = MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
    auto addNote = [&](IRBuilder<> &B, Value *P, Value *Len) {
      Value *Addr = B.CreatePtrToInt(P, I64);
      Value *Off = B.CreateSub(Addr, B.CreateLoad(I64, Lo, "sss.lo"));
      Value *In = B.CreateICmpULT(Off, B.CreateLoad(I64, Span, "sss.span"), "sss.inheap");
      Instruction *Then = SplitBlockAndInsertIfThen(In, &*B.GetInsertPoint(), false);
      IRBuilder<> T(Then);
      T.CreateCall(Note, {P, T.CreateZExtOrTrunc(Len, I64)});
    };
    for (Function &F : M) {
      if (F.isDeclaration())
        continue;
      LoopInfo *LI = nullptr;
      ScalarEvolution *SE = nullptr;
      DominatorTree *DT = nullptr;
      if (coalescing()) {
        LI = &FAM.getResult<LoopAnalysis>(F);
        SE = &FAM.getResult<ScalarEvolutionAnalysis>(F);
        DT = &FAM.getResult<DominatorTreeAnalysis>(F);
      }
      std::vector<Range> Ranges;
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
        if (isPrivate(P)) {
          Skipped++;
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
        std::vector<bool> Done(Stores.size(), false);
        for (size_t i = 0; i < Stores.size(); i++) {
          if (Done[i])
            continue;
          const SCEV *Base = SE->getSCEV(Stores[i].Ptr);
          std::vector<std::pair<int64_t, size_t>> Members; // offset, index
          for (size_t j = i; j < Stores.size(); j++) {
            if (Done[j])
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
          if (Contiguous) {
            const SCEV *Start = SE->getAddExpr(Base, SE->getConstant(Base->getType(), Lo, true));
            R = plan(Start, End - Lo, BB, *LI, *SE, *DT);
            if (R) {
              BasicBlock *Exit = R->L->getUniqueExitBlock();
              SCEVExpander X(*SE, M.getDataLayout(), "sss.range");
              Instruction *At = &*Exit->getFirstInsertionPt();
              if (!X.isSafeToExpandAt(R->Start, At) || !X.isSafeToExpandAt(R->Len, At))
                R.reset();
            }
          }
          if (R) {
            Ranges.push_back(*R);
            for (auto &M2 : Members) {
              Done[M2.second] = true;
              Coalesced++;
            }
          } else {
            Done[i] = true;
            Points.push_back(Stores[i]);
          }
        }
      }
      // Range notes first, while the analyses still describe the IR.
      for (Range &R : Ranges) {
        BasicBlock *Exit = R.L->getUniqueExitBlock();
        if (!Exit->getSinglePredecessor())
          Exit = SplitEdge(R.L->getLoopLatch(), Exit);
        Instruction *At = &*Exit->getFirstInsertionPt();
        SCEVExpander X(*SE, M.getDataLayout(), "sss.range");
        Value *Start = X.expandCodeFor(R.Start, Ptr, At);
        Value *Len = X.expandCodeFor(R.Len, I64, At);
        IRBuilder<> B(At);
        addNote(B, Start, Len);
        RangeNotes++;
      }
    }
    for (Point &Pt : Points) {
      IRBuilder<> B(Pt.I->getNextNode());
      addNote(B, Pt.Ptr, Pt.Len);
    }
    if (stats())
      errs() << "sss-rcop: " << M.getName() << ": " << Points.size()
             << " stores instrumented, " << Coalesced << " coalesced into " << RangeNotes
             << " range notes, " << Skipped << " private\n";
    return Points.empty() && RangeNotes == 0 ? PreservedAnalyses::all() : PreservedAnalyses::none();
  }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "sss-rcop", "0.1", [](PassBuilder &PB) {
            PB.registerOptimizerLastEPCallback(
                [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(Rcop()); });
          }};
}
