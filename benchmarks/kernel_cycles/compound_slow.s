# compound+[slow]: series:6.12 build ae9df9ca7b81, as the guest ran it (benchmarks/kernel_cycles.py)
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
movq %rbx, %rax
movq %rbx, %rdx
shrq $0xf, %rax
shrq $0x17, %rdx
nopl (%rax, %rax)
movl $0x20000, %esi
movq 0x68(%r14), %rcx
movl $1, %r8d
shll %cl, %r8d
movslq %r8d, %r8
cmpq %rsi, %rdx
jae 0xffffffff81388436
movq 0x6c5681(%rip), %rcx
testq %rcx, %rcx
je 0xffffffff81388436
movq (%rcx, %rdx, 8), %rdx
testq %rdx, %rdx
je 0xffffffff81388436
movzbl %al, %eax
shlq $4, %rax
addq %rax, %rdx
je 0xffffffff81388436
testb $8, (%rdx)
jne 0xffffffff81388454
movq %r8, %rax
shlq $6, %rax
cmpq $0x2fff, %rax
jbe 0xffffffff81388454
cmpq $0, 8(%rsp)
movl $0x80, %eax
cmoveq %rax, %r8
movl %r12d, %r9d
movq %r14, %rcx
movl $3, %edx
movq %rbx, %rsi
movq %r13, %rdi
callq 0xffffffff81387f70
nopl (%rax, %rax)
pushq %rbp
movq %rsi, %r11
xorl %eax, %eax
movq %rdx, %rsi
movq %rcx, %rdx
addq %r11, %r8
movq %rsp, %rbp
pushq %r15
pushq %r14
pushq %r13
movq %rdi, %r13
pushq %r12
pushq %rbx
andq $0xfffffffffffffff0, %rsp
addq $-0x80, %rsp
movq 0x68(%rcx), %r10
movl $8, %ecx
leaq 0x40(%rsp), %r14
movq %r14, %rdi
movl %r10d, 0x14(%rsp)
rep stosq %rax, (%rdi)
rep stosq %rax, (%rdi)
rep stosq %rax, (%rdi)
rep stosq %rax, (%rdi)
rep stosq %rax, (%rdi)
rep stosq %rax, (%rdi)
rep stosq %rax, (%rdi)
rep stosq %rax, (%rdi)
rep stosq %rax, (%rdi)
btsq $6, (%r13)
leaq 1(%r11), %rdi
cmpq %r8, %rdi
jae 0xffffffff813881af
movl $1, %eax
movl %r10d, %ecx
movq %r8, 0x38(%rsp)
movl %r9d, %ebx
shll %cl, %eax
movl $1, %r15d
movq %r10, 8(%rsp)
movl %eax, 0x10(%rsp)
movq %r13, %rax
movl %r15d, %r13d
movq %rdi, %r15
movq %rdi, 0x30(%rsp)
movq %rax, %r12
movq %rsi, 0x20(%rsp)
movq %rdx, 0x18(%rsp)
jmp 0xffffffff81388030
movq %r15, %rdi
shlq $6, %rdi
addq 0x38c18a(%rip), %rdi
testl %ebx, %ebx
jne 0xffffffff81388005
movq 0x18(%rsp), %rdx
movq 0x20(%rsp), %rsi
movq %rdi, 0x28(%rsp)
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
movslq %r13d, %rdx
movq 0x28(%rsp), %rdi
movabsq $0xdead000000000400, %rax
shlq $6, %rdx
leaq 1(%r12), %rsi
addq %r12, %rdx
movq %rax, 0x18(%rdx)
movq %rsi, 8(%rdx)
movq $0, 0x28(%rdx)
movl $0, 0x34(%rdi)
cmpq %r15, 0x30(%rsp)
jne 0xffffffff8138801a
movl 0x14(%rsp), %eax
testl %eax, %eax
jne 0xffffffff8138815a
movq (%r12), %rdx
andl $0x40, %edx
jne 0xffffffff813881be
movq 0x40(%r12), %rdx
movl 8(%rsp), %esi
movl 0x10(%rsp), %eax
xorb %dl, %dl
orq %rsi, %rdx
movl %eax, 0x60(%r12)
movq %rdx, 0x40(%r12)
jmp 0xffffffff81388163
movl $0xffffffff, 0x50(%r12)
movl $0xffffffff, 0x54(%r12)
movl $0, 0x58(%r12)
movl $0, 0x5c(%r12)
cmpl $1, 0x14(%rsp)
je 0xffffffff8138801a
leaq 0x90(%r12), %rdx
movq %rdx, 0x90(%r12)
movq %rdx, 0x98(%r12)
jmp 0xffffffff8138801a
movq 0x38(%rsp), %rax
addq $1, %r15
addl $1, %r13d
cmpq %rax, %r15
jae 0xffffffff813881af
leaq -0x28(%rbp), %rsp
popq %rbx
popq %r12
popq %r13
popq %r14
popq %r15
popq %rbp
retq
movq 0x20(%rsp), %rax
addq %rax, %rbx
movq 0x28(%rsp), %rax
cmpq %rax, %rbx
jae 0xffffffff81388534
