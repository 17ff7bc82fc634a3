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
// This is the unoptimized form (the seeds' NO row): one note per
// dynamic store that lands in the heap.

#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include <cstdlib>
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

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

struct Rcop : PassInfoMixin<Rcop> {
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
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
    unsigned Skipped = 0;
    for (Function &F : M) {
      if (F.isDeclaration())
        continue;
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
        Points.push_back({&I, P, Len});
      }
    }
    for (Point &Pt : Points) {
      Instruction *Next = Pt.I->getNextNode();
      IRBuilder<> B(Next);
      Value *Addr = B.CreatePtrToInt(Pt.Ptr, I64);
      Value *Off = B.CreateSub(Addr, B.CreateLoad(I64, Lo, "sss.lo"));
      Value *In = B.CreateICmpULT(Off, B.CreateLoad(I64, Span, "sss.span"), "sss.inheap");
      Instruction *Then = SplitBlockAndInsertIfThen(In, Next, false);
      IRBuilder<> T(Then);
      Value *Len = T.CreateZExtOrTrunc(Pt.Len, I64);
      T.CreateCall(Note, {Pt.Ptr, Len});
    }
    if (stats())
      errs() << "sss-rcop: " << M.getName() << ": " << Points.size()
             << " stores instrumented, " << Skipped << " private\n";
    return Points.empty() ? PreservedAnalyses::all() : PreservedAnalyses::none();
  }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "sss-rcop", "0.1", [](PassBuilder &PB) {
            PB.registerOptimizerLastEPCallback(
                [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(Rcop()); });
          }};
}
