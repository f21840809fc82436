# head_slow: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
movq %rbx, %rdi
shlq $6, %rdi
addq 0x38bd3a(%rip), %rdi
movq %rdi, %r13
testl %r12d, %r12d
je 0xffffffff813884c8
movq %r14, %rdx
movl $3, %esi
callq 0xffffffff81387f40
nopl (%rax, %rax)
pushq %rbp
movq %rdi, %rbp
pushq %rbx
movq %rdx, %rbx
callq 0xffffffff81387ee0
nopl (%rax, %rax)
leaq 8(%rdi), %rax
shlq $0x3e, %rsi
movl $1, 0x34(%rdi)
movq $0, 0x38(%rdi)
movl $0xffffffff, 0x30(%rdi)
movq $0, 0x28(%rdi)
movq %rax, 8(%rdi)
movq $0, 0x20(%rdi)
movq $0, 0x18(%rdi)
movq %rsi, (%rdi)
movq %rax, 0x10(%rdi)
btsq $0xd, (%rdi)
movq %rdx, 8(%rdi)
movq $0, 0x10(%rdi)
retq
movl 0x60(%rbx), %eax
subl $1, %eax
cmpl $1, %eax
ja 0xffffffff81387f64
popq %rbx
popq %rbp
retq
jmp 0xffffffff813884a8
testl $0x7fff, %ebx
jne 0xffffffff813883d8
cmpl $1, 0x1c(%rsp)
je 0xffffffff8138846a
movq 0x20(%rsp), %rax
addq %rax, %rbx
movq 0x28(%rsp), %rax
cmpq %rax, %rbx
jae 0xffffffff81388534
